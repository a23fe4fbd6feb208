"""KIP-890's server-side defence: before a transactional producer's first batch to a
partition is appended, the leader asks the transaction coordinator whether the partition was
added to the producer's ongoing transaction.

The transaction side implements `TransactionVerifier` (a broker-side AddPartitionsToTxn v4+
with verify_only); Produce calls it for transactional batches whose partition has no ongoing
transaction for that producer. A leader tracks one guard per producer being verified: a
marker written meanwhile (the transaction ended) voids it, so a late batch cannot reopen a
finished transaction.
"""

from __future__ import annotations

from typing import Protocol

from clients.protocol import ErrorCode

TopicPartition = tuple[str, int]

# Coordinator states a producer retries through; Produce before v11 has no way to say them,
# so Kafka answers NOT_ENOUGH_REPLICAS, which every producer retries.
_RETRIABLE_AS_NOT_ENOUGH_REPLICAS = frozenset({
    ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
})


class TransactionVerifier(Protocol):
    """Asks the coordinator of `transactional_id` whether `partitions` are in the
    producer's ongoing transaction; returns an error code per partition (0: verified)."""

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: list[TopicPartition]) -> dict[TopicPartition, int]: ...


def produce_error_for(code: int) -> int:
    """The Produce error for a verification answer (0 stays 0)."""
    if code in _RETRIABLE_AS_NOT_ENOUGH_REPLICAS:
        return int(ErrorCode.NOT_ENOUGH_REPLICAS)
    return int(code)


class VerificationGuard:
    """Proof that a partition's verification started before any marker ended the
    transaction; one object per verification, compared by identity."""

    __slots__ = ("producer_id",)

    def __init__(self, producer_id: int) -> None:
        self.producer_id = producer_id
