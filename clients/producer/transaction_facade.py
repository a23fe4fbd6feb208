"""What the blocking and trio transactional facades share.

The operations themselves (``transaction_ops``) are I/O-free generators; each facade only
drives them with its own kind of I/O. Everything else, from starting an operation to deciding
the next step and when ``max.block.ms`` has run out, lives here once.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from clients.producer.core import ProducerCore
from clients.producer.transaction_ops import (
    Flush,
    Operation,
    Step,
    add_partitions,
    end_transaction,
    init_transactions,
    send_offsets,
)
from clients.producer.transactions import (
    ConsumerGroupMetadata,
    TransactionManager,
    TransactionStateError,
)
from clients.protocol import ErrorCode, KafkaError


def offsets_of(offsets: Mapping[tuple[str, int], Any]) -> dict[tuple[str, int], int]:
    """Offsets as ints; values may also be objects with an ``offset`` (OffsetAndMetadata)."""
    return {tp: int(getattr(o, "offset", o)) for tp, o in offsets.items()}


def group_of(group: ConsumerGroupMetadata | str) -> ConsumerGroupMetadata:
    return ConsumerGroupMetadata(group) if isinstance(group, str) else group


class TransactionFacade:
    """The transactional API's state checks and operations, without I/O."""

    def __init__(self, core: ProducerCore) -> None:
        self._core = core

    @property
    def manager(self) -> TransactionManager:
        manager = self._core.txn
        if manager is None:
            raise TransactionStateError("transactional.id is not set: this producer is "
                                        "not transactional")
        return manager

    @property
    def _backoff_s(self) -> float:
        return self._core.config.retry_backoff_ms / 1000

    @property
    def _max_block_s(self) -> float:
        return self._core.config.max_block_ms / 1000

    def _init_operation(self) -> Operation:
        self.manager.start_init()
        return init_transactions(self.manager, self._backoff_s)

    def _send_offsets_operation(self, offsets: Mapping[tuple[str, int], Any],
                                group: ConsumerGroupMetadata | str) -> Operation:
        self.manager.check_offsets()
        return send_offsets(self.manager, offsets_of(offsets), group_of(group),
                            self._backoff_s)

    def _end_operation(self, commit: bool) -> Operation:
        if commit:
            self.manager.start_commit()
        else:
            self.manager.start_abort()
        return end_transaction(self.manager, commit, self._backoff_s)

    def _add_partitions_operation(self, manager: TransactionManager) -> Operation:
        return add_partitions(manager, self._backoff_s)

    def _advance(self, operation: Operation, value: Any, error: BaseException | None,
                 expired: Callable[[], bool]) -> Step:
        """The operation's next step (StopIteration carries its result). KafkaError
        REQUEST_TIMED_OUT when it is still retrying after ``max.block.ms``, as Kafka's
        producer; the call may be repeated. A flush is never cut short."""
        step = operation.throw(error) if error is not None else operation.send(value)
        if not isinstance(step, Flush) and expired():
            operation.close()
            raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, "the transactional request "
                             "did not complete within max.block.ms "
                             f"({self._core.config.max_block_ms} ms)")
        return step
