"""Runs the transactional producer's operations (``transaction_ops``) with blocking I/O."""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Mapping

from clients.admin.connections import BlockingConnectionPool
from clients.net import KafkaConnectionError
from clients.producer.core import ProducerCore
from clients.producer.transaction_ops import (
    Flush,
    Operation,
    Send,
    Sleep,
    add_partitions,
    end_transaction,
    init_transactions,
    send_offsets,
)
from clients.producer.transactions import (
    ConsumerGroupMetadata,
    TransactionAbortedError,
    TransactionManager,
    TransactionStateError,
)
from clients.producer.trio_transactions import group_of, offsets_of
from clients.protocol import ErrorCode, KafkaError, ProtocolError

logger = logging.getLogger(__name__)


class BlockingTransactions:
    """The transactional API of one blocking producer."""

    def __init__(self, core: ProducerCore, pool: BlockingConnectionPool,
                 flush: Callable[[], None]) -> None:
        self._core = core
        self._pool = pool
        self._flush = flush

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

    def init(self) -> None:
        self.manager.start_init()
        self.run(init_transactions(self.manager, self._backoff_s))

    def send_offsets(self, offsets: Mapping[tuple[str, int], Any],
                     group: ConsumerGroupMetadata | str) -> None:
        self.manager.check_offsets()
        self.run(send_offsets(self.manager, offsets_of(offsets), group_of(group),
                              self._backoff_s))

    def end(self, commit: bool) -> None:
        if commit:
            self.manager.start_commit()
        else:
            self.manager.start_abort()
        self.run(end_transaction(self.manager, commit, self._backoff_s))

    def add_pending_partitions(self) -> None:
        """Before sending: add new partitions to the transaction (errors are kept in the
        manager, and make commit_transaction fail)."""
        manager = self._core.txn
        if manager is None or not manager.pending or manager.in_error:
            return
        try:
            self.run(add_partitions(manager, self._backoff_s))
        except KafkaError as exc:
            logger.warning("the transaction cannot go on: %s", exc)

    def run(self, operation: Operation) -> Any:
        """Run an operation; KafkaError REQUEST_TIMED_OUT when it is still retrying after
        ``max.block.ms`` (as Kafka's producer; the call may be repeated)."""
        deadline = time.monotonic() + self._core.config.max_block_ms / 1000
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = operation.throw(error) if error is not None else operation.send(value)
            except StopIteration as stop:
                return stop.value
            value, error = None, None
            if not isinstance(step, Flush) and time.monotonic() > deadline:
                operation.close()
                raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, "the transactional request "
                                 "did not complete within max.block.ms "
                                 f"({self._core.config.max_block_ms} ms)")
            if isinstance(step, Send):
                try:
                    value = self._send(step)
                except (KafkaConnectionError, ProtocolError) as exc:
                    error = KafkaConnectionError(str(exc))
            elif isinstance(step, Sleep):
                time.sleep(step.seconds)
            elif isinstance(step, Flush):
                if step.abort:
                    self._core.abort_unsent(TransactionAbortedError())
                self._flush()

    def _send(self, step: Send) -> dict[str, Any]:
        if step.node is None:
            brokers = self._core.cluster.brokers.values()
            return self._pool.request_any(step.api_key, step.body, brokers, step.version)
        version = None
        if step.version is not None:
            conn = self._pool.connection(step.node)
            version = min(conn.pick_version(step.api_key), step.version)
        return self._pool.request(step.node, step.api_key, step.body, version)
