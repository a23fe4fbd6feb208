"""Runs the transactional producer's operations (``transaction_ops``) with trio I/O."""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable, Mapping

import trio

from clients.common.connections import TrioConnectionPool
from clients.net import FatalConnectionError, KafkaConnectionError
from clients.producer.core import ProducerCore
from clients.producer.transaction_facade import TransactionFacade
from clients.producer.transaction_ops import Flush, Operation, SendRequest, Sleep
from clients.producer.transactions import (
    ConsumerGroupMetadata,
    TransactionAbortedError,
    TransactionManager,
)
from clients.protocol import KafkaError, ProtocolError

logger = logging.getLogger(__name__)


class TrioTransactions(TransactionFacade):
    """The transactional API of one trio producer."""

    def __init__(self, core: ProducerCore, pool: TrioConnectionPool,
                 flush: Callable[[], Awaitable[None]], wake: Callable[[], None]) -> None:
        super().__init__(core)
        self._pool = pool
        self._flush = flush
        self._wake = wake
        self._adding = False
        self._lock = trio.Lock()          # one application-side operation at a time

    async def init(self) -> None:
        async with self._lock:
            await self.run(self._init_operation())

    async def send_offsets(self, offsets: Mapping[tuple[str, int], Any],
                           group: ConsumerGroupMetadata | str) -> None:
        async with self._lock:
            await self.run(self._send_offsets_operation(offsets, group))

    async def end(self, commit: bool) -> None:
        async with self._lock:
            await self.run(self._end_operation(commit))

    def maybe_add_partitions(self, nursery: trio.Nursery) -> None:
        """From the sender: add new partitions to the transaction, one request at a time."""
        manager = self._core.txn
        if manager is None or self._adding or not manager.pending or manager.in_error:
            return
        self._adding = True
        nursery.start_soon(self._add_partitions, manager)

    async def _add_partitions(self, manager: TransactionManager) -> None:
        try:
            await self.run(self._add_partitions_operation(manager))
        except FatalConnectionError:
            pass  # kept by the core: the next call raises it
        except KafkaError as exc:
            logger.warning("the transaction cannot go on: %s", exc)
        finally:
            self._adding = False
            self._wake()

    async def run(self, operation: Operation) -> Any:
        """Run an operation to its end, within ``max.block.ms``."""
        deadline = trio.current_time() + self._max_block_s
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = self._advance(operation, value, error,
                                     lambda: trio.current_time() > deadline)
            except StopIteration as stop:
                return stop.value
            value, error = None, None
            if isinstance(step, SendRequest):
                try:
                    value = await self._send(step)
                except FatalConnectionError as exc:
                    self._core.fatal(exc)
                    raise
                except (KafkaConnectionError, ProtocolError) as exc:
                    error = KafkaConnectionError(str(exc))
            elif isinstance(step, Sleep):
                await trio.sleep(step.seconds)
            elif isinstance(step, Flush):
                if step.abort:
                    self._core.abort_unsent(TransactionAbortedError())
                await self._flush()

    async def _send(self, step: SendRequest) -> dict[str, Any]:
        if step.node is None:
            brokers = self._core.cluster.brokers.values()
            return await self._pool.request_any(step.api_key, step.body, brokers, step.version)
        version = None
        if step.version is not None:
            conn = await self._pool.connection(step.node)
            version = min(conn.pick_version(step.api_key), step.version)
        return await self._pool.request(step.node, step.api_key, step.body, version)
