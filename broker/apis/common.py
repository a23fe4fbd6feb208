"""Small helpers the data-plane handlers share: the per-partition errors they answer, with
their Kafka codes (the replica manager's, which lets them through)."""

from __future__ import annotations

from broker.replica.errors import PARTITION_ERRORS, error_code_of

__all__ = ["PARTITION_ERRORS", "error_code_of"]
