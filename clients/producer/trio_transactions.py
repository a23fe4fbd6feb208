"""Runs the transactional producer's operations (``transaction_ops``) with trio I/O."""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable, Mapping

import trio

from clients.admin.connections import TrioConnectionPool
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
from clients.protocol import ErrorCode, KafkaError, ProtocolError

logger = logging.getLogger(__name__)


def offsets_of(offsets: Mapping[tuple[str, int], Any]) -> dict[tuple[str, int], int]:
    """Offsets as ints; values may also be objects with an ``offset`` (OffsetAndMetadata)."""
    return {tp: int(getattr(o, "offset", o)) for tp, o in offsets.items()}


def group_of(group: ConsumerGroupMetadata | str) -> ConsumerGroupMetadata:
    return ConsumerGroupMetadata(group) if isinstance(group, str) else group


class TrioTransactions:
    """The transactional API of one trio producer."""

    def __init__(self, core: ProducerCore, pool: TrioConnectionPool,
                 flush: Callable[[], Awaitable[None]], wake: Callable[[], None]) -> None:
        self._core = core
        self._pool = pool
        self._flush = flush
        self._wake = wake
        self._adding = False
        self._lock = trio.Lock()          # one application-side operation at a time

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

    async def init(self) -> None:
        async with self._lock:
            self.manager.start_init()
            await self.run(init_transactions(self.manager, self._backoff_s))

    async def send_offsets(self, offsets: Mapping[tuple[str, int], Any],
                           group: ConsumerGroupMetadata | str) -> None:
        async with self._lock:
            self.manager.check_offsets()
            await self.run(send_offsets(self.manager, offsets_of(offsets), group_of(group),
                                        self._backoff_s))

    async def end(self, commit: bool) -> None:
        async with self._lock:
            if commit:
                self.manager.start_commit()
            else:
                self.manager.start_abort()
            await self.run(end_transaction(self.manager, commit, self._backoff_s))

    def maybe_add_partitions(self, nursery: trio.Nursery) -> None:
        """From the sender: add new partitions to the transaction, one request at a time."""
        manager = self._core.txn
        if manager is None or self._adding or not manager.pending or manager.in_error:
            return
        self._adding = True
        nursery.start_soon(self._add_partitions, manager)

    async def _add_partitions(self, manager: TransactionManager) -> None:
        try:
            await self.run(add_partitions(manager, self._backoff_s))
        except KafkaError as exc:
            logger.warning("the transaction cannot go on: %s", exc)
        finally:
            self._adding = False
            self._wake()

    async def run(self, operation: Operation) -> Any:
        """Run an operation; KafkaError REQUEST_TIMED_OUT when it is still retrying after
        ``max.block.ms`` (as Kafka's producer; the call may be repeated)."""
        deadline = trio.current_time() + self._core.config.max_block_ms / 1000
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = operation.throw(error) if error is not None else operation.send(value)
            except StopIteration as stop:
                return stop.value
            value, error = None, None
            if not isinstance(step, Flush) and trio.current_time() > deadline:
                operation.close()
                raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, "the transactional request "
                                 "did not complete within max.block.ms "
                                 f"({self._core.config.max_block_ms} ms)")
            if isinstance(step, Send):
                try:
                    value = await self._send(step)
                except (KafkaConnectionError, ProtocolError) as exc:
                    error = KafkaConnectionError(str(exc))
            elif isinstance(step, Sleep):
                await trio.sleep(step.seconds)
            elif isinstance(step, Flush):
                if step.abort:
                    self._core.abort_unsent(TransactionAbortedError())
                await self._flush()

    async def _send(self, step: Send) -> dict[str, Any]:
        if step.node is None:
            brokers = self._core.cluster.brokers.values()
            return await self._pool.request_any(step.api_key, step.body, brokers, step.version)
        version = None
        if step.version is not None:
            conn = await self._pool.connection(step.node)
            version = min(conn.pick_version(step.api_key), step.version)
        return await self._pool.request(step.node, step.api_key, step.body, version)
