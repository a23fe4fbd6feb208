"""Producer ids for idempotent producers, from id blocks the controller allocates.

As Kafka's RPCProducerIdManager: the broker asks the active controller for a block with
AllocateProducerIds (its id and broker epoch), hands ids out of it, and fetches the next
block when this one runs out.
"""

from __future__ import annotations

import logging
from typing import Awaitable, Callable

import trio

from broker.controller_client import ControllerClient, ControllerUnavailableError
from clients.protocol import ApiKey, ErrorCode

logger = logging.getLogger(__name__)

ALLOCATE_TIMEOUT_MS = 5_000


class ProducerIdsUnavailable(Exception):
    """No producer id block could be obtained from the controller."""


# Returns (first id, count) of a fresh block; raises ProducerIdsUnavailable.
BlockSource = Callable[[], Awaitable[tuple[int, int]]]


def controller_block_source(channel: ControllerClient, broker_id: int,
                            broker_epoch: Callable[[], int],
                            timeout_ms: int = ALLOCATE_TIMEOUT_MS) -> BlockSource:
    """Blocks from AllocateProducerIds through the broker's client to the controller."""

    async def allocate() -> tuple[int, int]:
        epoch = broker_epoch()
        if epoch < 0:
            raise ProducerIdsUnavailable("the broker is not registered yet")
        try:
            response = await channel.send(
                ApiKey.ALLOCATE_PRODUCER_IDS, {"broker_id": broker_id, "broker_epoch": epoch},
                timeout_ms)
        except ControllerUnavailableError as exc:
            raise ProducerIdsUnavailable(str(exc)) from None
        code = int(response.get("error_code", 0))
        if code != ErrorCode.NONE or int(response.get("producer_id_len", 0)) <= 0:
            raise ProducerIdsUnavailable(f"AllocateProducerIds failed with error {code}")
        return int(response["producer_id_start"]), int(response["producer_id_len"])

    return allocate


class ProducerIdManager:
    """Hands out producer ids from controller-allocated blocks, one block at a time."""

    def __init__(self, source: BlockSource) -> None:
        self._source = source
        self._next = 0
        self._end = 0
        self._lock = trio.Lock()

    async def generate(self) -> int:
        """The next unused producer id; raises ProducerIdsUnavailable."""
        async with self._lock:
            if self._next >= self._end:
                start, length = await self._source()
                self._next, self._end = start, start + length
                logger.info("got producer id block [%d, %d)", start, start + length)
            producer_id = self._next
            self._next += 1
            return producer_id
