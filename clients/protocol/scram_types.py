"""The SCRAM vocabulary of the wire: Kafka's ScramMechanism type ids (in
AlterUserScramCredentials, DescribeUserScramCredentials and the credential records) and the
bounds on a credential's iteration count."""

from __future__ import annotations

SCRAM_SHA_256 = 1
SCRAM_SHA_512 = 2
MECHANISM_NAMES: dict[int, str] = {SCRAM_SHA_256: "SCRAM-SHA-256", SCRAM_SHA_512: "SCRAM-SHA-512"}
MECHANISM_IDS: dict[str, int] = {name: mid for mid, name in MECHANISM_NAMES.items()}
# Kafka's bounds on a credential's iteration count (ScramMechanism.minIterations, and the
# 16384 ceiling AlterUserScramCredentials enforces).
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
