"""Runs the transactional producer's operations (``transaction_ops``) with blocking I/O."""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Mapping

from clients.common.connections import BlockingConnectionPool
from clients.net import FatalConnectionError, KafkaConnectionError
from clients.producer.core import ProducerCore
from clients.producer.transaction_facade import TransactionFacade
from clients.producer.transaction_ops import Flush, Operation, SendRequest, Sleep
from clients.producer.transactions import ConsumerGroupMetadata, TransactionAbortedError
from clients.protocol import KafkaError, ProtocolError

logger = logging.getLogger(__name__)


class BlockingTransactions(TransactionFacade):
    """The transactional API of one blocking producer."""

    def __init__(self, core: ProducerCore, pool: BlockingConnectionPool,
                 flush: Callable[[], None]) -> None:
        super().__init__(core)
        self._pool = pool
        self._flush = flush

    def init(self) -> None:
        self.run(self._init_operation())

    def send_offsets(self, offsets: Mapping[tuple[str, int], Any],
                     group: ConsumerGroupMetadata | str) -> None:
        self.run(self._send_offsets_operation(offsets, group))

    def end(self, commit: bool) -> None:
        self.run(self._end_operation(commit))

    def add_pending_partitions(self) -> None:
        """Before sending: add new partitions to the transaction (errors are kept in the
        manager, and make commit_transaction fail)."""
        manager = self._core.txn
        if manager is None or not manager.pending or manager.in_error:
            return
        try:
            self.run(self._add_partitions_operation(manager))
        except FatalConnectionError:
            pass  # kept by the core: the next call raises it
        except KafkaError as exc:
            logger.warning("the transaction cannot go on: %s", exc)

    def run(self, operation: Operation) -> Any:
        """Run an operation to its end, within ``max.block.ms``."""
        deadline = time.monotonic() + self._max_block_s
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = self._advance(operation, value, error,
                                     lambda: time.monotonic() > deadline)
            except StopIteration as stop:
                return stop.value
            value, error = None, None
            if isinstance(step, SendRequest):
                try:
                    value = self._send(step)
                except FatalConnectionError as exc:
                    self._core.fatal(exc)
                    raise
                except (KafkaConnectionError, ProtocolError) as exc:
                    error = KafkaConnectionError(str(exc))
            elif isinstance(step, Sleep):
                time.sleep(step.seconds)
            elif isinstance(step, Flush):
                if step.abort:
                    self._core.abort_unsent(TransactionAbortedError())
                self._flush()

    def _send(self, step: SendRequest) -> dict[str, Any]:
        if step.node is None:
            brokers = self._core.cluster.brokers.values()
            return self._pool.request_any(step.api_key, step.body, brokers, step.version)
        version = None
        if step.version is not None:
            conn = self._pool.connection(step.node)
            version = min(conn.pick_version(step.api_key), step.version)
        return self._pool.request(step.node, step.api_key, step.body, version)
