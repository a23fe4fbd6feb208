"""KIP-890 verification of a producer's transactional append (Kafka's ReplicaManager asks the
coordinator before appending): each partition where the producer's transactional batch would
open a transaction gets a guard the append must find still current, or fails with the error
the coordinator's answer maps to. Malformed payloads are left to the append to answer."""

from __future__ import annotations

import logging
from typing import Any, Protocol, Sequence

from broker.replica.errors import PARTITION_ERRORS
from broker.replica.manager import ReplicaManager
from broker.replica.partition import Partition
from broker.replica.txn_verification import (
    TopicPartition,
    TransactionVerifier,
    VerificationGuard,
    produce_error_for,
)
from clients.protocol import ErrorCode
from clients.records.errors import CorruptRecordError
from clients.records.header import parse_header

logger = logging.getLogger(__name__)


class VerifiedEntry(Protocol):
    """What the verification reads and sets on an append entry (`AppendEntry`)."""

    topic: str
    partition: int
    records: Any
    error_code: int
    verification: VerificationGuard | None

    def fail(self, code: int, message: str | None = None) -> None: ...


async def verify_transactional_entries(replicas: ReplicaManager, verifier: TransactionVerifier,
                                       transactional_id: str,
                                       entries: Sequence[VerifiedEntry]) -> None:
    """Verify the entries whose transactional batch would open the producer's transaction
    in its partition: a verified entry gets its guard, a refused one its error."""
    guards: dict[TopicPartition, VerificationGuard] = {}
    partitions: dict[TopicPartition, Partition] = {}
    producer: tuple[int, int] | None = None
    for entry in entries:
        if entry.error_code or entry.records is None:
            continue
        try:
            partition = replicas.leader_partition(entry.topic, entry.partition)
            header = parse_header(entry.records, 0)
        except (CorruptRecordError, *PARTITION_ERRORS):
            continue
        if not header.is_transactional or header.producer_id < 0:
            continue
        producer = producer or (header.producer_id, header.producer_epoch)
        if partition.needs_verification(header.producer_id):
            guards[partition.key] = partition.start_verification(header.producer_id)
            partitions[partition.key] = partition
    if not guards or producer is None:
        return
    try:
        codes = await verifier.verify(transactional_id, producer[0], producer[1], list(guards))
    except Exception:  # noqa: BLE001 - the coordinator is unreachable: the producer retries
        logger.warning("verifying the transaction of %r failed", transactional_id, exc_info=True)
        codes = {key: int(ErrorCode.COORDINATOR_NOT_AVAILABLE) for key in guards}
    refused: dict[TopicPartition, int] = {}
    for key, guard in guards.items():
        code = codes.get(key, int(ErrorCode.INVALID_TXN_STATE))
        if code != ErrorCode.NONE:
            refused[key] = produce_error_for(code)
            partitions[key].end_verification(guard)
    for entry in entries:
        if entry.error_code:
            continue
        key = (entry.topic, entry.partition)
        code = refused.get(key)
        if code is not None:
            entry.fail(code, "the partition is not part of the producer's transaction"
                       if code == ErrorCode.INVALID_TXN_STATE else "transaction verification failed")
        else:
            entry.verification = guards.get(key)
