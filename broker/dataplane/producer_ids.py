"""InitProducerId (v0-4) for idempotent producers, from id blocks the controller allocates.

As Kafka's RPCProducerIdManager: the broker asks the active controller for a block with
AllocateProducerIds (its id and broker epoch), hands ids out of it, and fetches the next
block when this one runs out. While no block can be had the answer is
COORDINATOR_LOAD_IN_PROGRESS, which clients retry.
"""

from __future__ import annotations

import logging
from typing import Awaitable, Callable

import trio

from broker.network.router import ConnectionContext, DecodedRequest, RequestRouter
from clients.protocol import ApiKey, ErrorCode

logger = logging.getLogger(__name__)

ALLOCATE_TIMEOUT_MS = 5_000


class ProducerIdsUnavailable(Exception):
    """No producer id block could be obtained from the controller."""


# Returns (first id, count) of a fresh block; raises ProducerIdsUnavailable.
BlockSource = Callable[[], Awaitable[tuple[int, int]]]


def controller_block_source(channel: object, broker_id: int,
                            broker_epoch: Callable[[], int],
                            timeout_ms: int = ALLOCATE_TIMEOUT_MS) -> BlockSource:
    """Blocks from AllocateProducerIds through a `broker.controller_channel.ControllerChannel`."""
    from broker.controller_channel import ControllerUnavailableError

    async def allocate() -> tuple[int, int]:
        epoch = broker_epoch()
        if epoch < 0:
            raise ProducerIdsUnavailable("the broker is not registered yet")
        try:
            response = await channel.send(  # type: ignore[attr-defined]
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


class InitProducerIdHandler:
    """InitProducerId without transactions (a transactional id is refused with
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED). As Kafka's TransactionCoordinator, a request with
    no transactional id always gets a new id at epoch 0, also when it names the producer's
    current id and epoch (an idempotent producer's KIP-360 epoch bump)."""

    def __init__(self, producer_ids: ProducerIdManager) -> None:
        self._producer_ids = producer_ids

    def register(self, router: RequestRouter) -> None:
        router.register(ApiKey.INIT_PRODUCER_ID, self.handle, init_producer_id_body)

    async def handle(self, request: DecodedRequest, ctx: ConnectionContext) -> dict:
        body = request.body
        producer_id = int(body.get("producer_id", -1))
        epoch = int(body.get("producer_epoch", -1))
        transactional_id = body.get("transactional_id")
        if (producer_id < 0) != (epoch < 0) or transactional_id == "":
            return init_producer_id_body(request, ErrorCode.INVALID_REQUEST)
        if transactional_id is not None:
            # No transaction coordinator yet. A retriable answer would leave the producer
            # retrying until its timeout; clients treat this one as fatal (InitProducerId
            # has no error message: FindCoordinator, asked first, carries the explanation).
            return init_producer_id_body(request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        try:
            new_id = await self._producer_ids.generate()
        except ProducerIdsUnavailable as exc:
            logger.warning("cannot hand out a producer id: %s", exc)
            return init_producer_id_body(request, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "producer_id": new_id,
                "producer_epoch": 0}


def init_producer_id_body(request: DecodedRequest | None, error_code: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": error_code, "producer_id": -1,
            "producer_epoch": -1}
