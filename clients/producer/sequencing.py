"""The producer core's idempotence and transaction hooks: the producer id, stamping
sequences into drained batches, the epoch bump of KIP-360, and what a failed batch means
for the sequence or the transaction. Mixed into ``ProducerCore``; pure like it."""

from __future__ import annotations

import logging
from typing import Any, Callable

from clients.producer.accumulator import ProducerBatch, RecordAccumulator
from clients.producer.config import ProducerConfig
from clients.producer.idempotence import IdempotenceState
from clients.producer.transactions import TransactionManager
from clients.protocol import ErrorCode, KafkaError

logger = logging.getLogger(__name__)

# Sequence errors an idempotent producer recovers from by bumping its epoch (KIP-360) when
# the refused batch is the first the partition has not acknowledged; otherwise an earlier
# batch is missing and this one is retried after it.
SEQUENCE_ERRORS = frozenset({ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                             ErrorCode.UNKNOWN_PRODUCER_ID})


class SequencingMixin:
    """Producer ids, sequences and transaction hooks of ``ProducerCore``."""

    config: ProducerConfig
    accumulator: RecordAccumulator
    in_flight: dict[int, int]
    idempotence: IdempotenceState | None
    txn: TransactionManager | None
    on_batch_failed: Callable[[ProducerBatch, BaseException], None] | None

    def _retry(self, batch: ProducerBatch, now: float) -> None:
        raise NotImplementedError

    def check_transaction(self) -> None:
        """A transactional producer sends only inside a transaction."""
        if self.txn is not None:
            self.txn.check_send()

    def abort_unsent(self, error: BaseException) -> None:
        """Fail every batch not in flight (an abort, or a transaction in error)."""
        if self.txn is not None and any(b.stamped is not None and not b.in_flight
                                        for b in self.accumulator):
            self.txn.epoch_bump_needed = True    # a sequence the broker never got
        self.accumulator.abort_all(error)

    @property
    def needs_producer_id(self) -> bool:
        """An idempotent producer with data to send but no producer id yet: the driver
        sends InitProducerId (``init_producer_id_request``) before anything else."""
        state = self.idempotence
        return (state is not None and not state.has_id and not state.transactional
                and bool(self.accumulator) and not any(self.in_flight.values()))

    def init_producer_id_request(self) -> dict[str, Any]:
        return {"transactional_id": None, "transaction_timeout_ms": 2147483647,
                "producer_id": -1, "producer_epoch": -1}

    def apply_producer_id(self, response: dict[str, Any]) -> KafkaError | None:
        """Take an InitProducerId answer; the error (to retry after a backoff) if any."""
        assert self.idempotence is not None
        code = ErrorCode.from_code(response["error_code"])
        if code != ErrorCode.NONE:
            return self.producer_id_failed(KafkaError(code, f"InitProducerId: {code.message}"))
        self.idempotence.set_identity(response["producer_id"], response["producer_epoch"])
        logger.debug("producer id %d epoch %d", response["producer_id"],
                     response["producer_epoch"])
        return None

    def producer_id_failed(self, error: BaseException) -> BaseException:
        """InitProducerId could not be had. When idempotence is only the default and the
        cluster cannot give producer ids at all (no InitProducerId, or no IDEMPOTENT_WRITE
        permission), the producer goes on without it; the error is returned either way."""
        code = getattr(error, "code", None)
        if (not self.config.idempotence_explicit
                and code in (ErrorCode.UNSUPPORTED_VERSION,
                             ErrorCode.CLUSTER_AUTHORIZATION_FAILED)):
            logger.warning("the cluster cannot give this producer an id (%s): sending "
                           "without idempotence, as enable.idempotence was not set", error)
            self.idempotence = None
            self.accumulator.in_flight_per_partition = 1
        return error

    def _stamp(self, batch: ProducerBatch) -> None:
        assert self.idempotence is not None
        if batch.payload is not None and self.idempotence.is_current(batch.stamped):
            return                           # a retry keeps its sequence
        batch.payload, batch.stamped = self.idempotence.stamp(
            batch.tp, batch.builder.build(), batch.records, batch.stamped)

    def _ready_to_sequence(self) -> bool:
        """Whether batches may be drained now: the producer has an id, and a pending epoch
        bump (which restarts every sequence) waits until nothing is in flight."""
        state = self.idempotence
        if state is None:
            return True
        if state.epoch_bump_needed and not state.transactional:
            if any(self.in_flight.values()):
                return False
            if state.bump_epoch_locally():
                logger.info("bumped producer epoch to %d (producer id %d) to reset sequences",
                            state.identity.epoch, state.identity.producer_id)
        return state.has_id

    def _succeeded(self, batch: ProducerBatch, base_offset: int, append_time: int) -> None:
        if self.idempotence is not None and batch.stamped is not None:
            self.idempotence.acknowledged(batch.tp, batch.stamped, batch.records)
        self.accumulator.complete(batch)
        batch.succeed(base_offset, append_time)

    def _sequence_error(self, batch: ProducerBatch, code: ErrorCode, message: str,
                        now: float) -> bool:
        """Handle OUT_OF_ORDER_SEQUENCE_NUMBER / UNKNOWN_PRODUCER_ID for an idempotent
        producer; False leaves the batch to the ordinary error path."""
        state = self.idempotence
        if state is None or batch.stamped is None:
            return False
        if not state.is_current(batch.stamped):
            self._retry(batch, now)          # sent before a bump: restamped on its retry
            return True
        if state.is_next_sequence(batch.tp, batch.stamped):
            logger.info("%s-%d answered %s for the next sequence %d: resetting the "
                        "producer's sequences", batch.topic, batch.partition, code.name,
                        batch.stamped[2])
            if state.transactional:
                return False                 # the transaction must be aborted
            state.epoch_bump_needed = True
        if batch.attempts > self.config.retries:
            return False
        self._retry(batch, now)
        return True

    def _sequences_broken(self, batch: ProducerBatch, error: BaseException) -> None:
        """A batch failed for good. A transactional producer must abort (any failed record
        does that, as in Kafka); an idempotent one bumps its epoch when the batch had a
        sequence (the gap would refuse every later batch)."""
        state = self.idempotence
        if state is None:
            return
        if state.transactional:
            if self.on_batch_failed is not None:
                self.on_batch_failed(batch, error)
        elif batch.stamped is not None and state.is_current(batch.stamped):
            state.epoch_bump_needed = True
