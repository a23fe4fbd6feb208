"""SCRAM credentials in the metadata log: the two KRaft records and the image's view of them.

A credential is what RFC 5802 lets a server keep instead of a password: the salt, the
iteration count, StoredKey and ServerKey. Nothing here ever holds a password.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# The mechanism ids and iteration bounds are the wire's (as Kafka's metadata module uses the
# clients' ScramMechanism), re-exported here.
from clients.protocol.scram_types import (
    MAX_ITERATIONS,
    MECHANISM_IDS,
    MECHANISM_NAMES,
    MIN_ITERATIONS,
    SCRAM_SHA_256,
    SCRAM_SHA_512,
)
from metadata.record_classes import RemoveUserScramCredentialRecord, UserScramCredentialRecord

__all__ = ["MAX_ITERATIONS", "MECHANISM_IDS", "MECHANISM_NAMES", "MIN_ITERATIONS",
           "SCRAM_SHA_256", "SCRAM_SHA_512", "RemoveUserScramCredentialRecord", "ScramCredential",
           "ScramKey", "UserScramCredentialRecord", "credential_records", "merge_credentials"]


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """A stored SCRAM credential (RFC 5802 section 3)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:
        return f"ScramCredential(iterations={self.iterations})"

    @classmethod
    def from_record(cls, record: UserScramCredentialRecord) -> "ScramCredential":
        return cls(record.salt, record.stored_key, record.server_key, record.iterations)

    def to_record(self, name: str, mechanism: int) -> UserScramCredentialRecord:
        return UserScramCredentialRecord(name, mechanism, self.salt, self.stored_key,
                                         self.server_key, self.iterations)


ScramKey = tuple[str, int]
"""(user name, mechanism id)."""


def merge_credentials(base: Mapping[ScramKey, ScramCredential],
                      changes: Mapping[ScramKey, ScramCredential | None]
                      ) -> dict[ScramKey, ScramCredential]:
    """`base` with `changes` applied (None removes)."""
    merged = dict(base)
    for key, credential in changes.items():
        if credential is None:
            merged.pop(key, None)
        else:
            merged[key] = credential
    return merged


def credential_records(credentials: Mapping[ScramKey, ScramCredential]
                       ) -> list[UserScramCredentialRecord]:
    """Records that rebuild `credentials` (snapshots)."""
    return [credential.to_record(name, mechanism)
            for (name, mechanism), credential in sorted(credentials.items())]
