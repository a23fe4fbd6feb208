"""InitProducerId (v0-4) for idempotent and transactional producers, from the broker's
producer id blocks (`broker.producer_id_manager`); while no block can be had the answer is
COORDINATOR_LOAD_IN_PROGRESS, which clients retry."""

from __future__ import annotations

import logging
from typing import Protocol

from broker.apis.authorization import ALLOW_ALL, AclOperation, Authorization, ResourceType
from broker.apis.request import DecodedRequest, RequestContext, RequestRouter
from broker.producer_id_manager import ProducerIdManager, ProducerIdsUnavailable
from clients.protocol import ApiKey, ErrorCode
from clients.protocol.messages.init_producer_id import (
    InitProducerIdRequestData,
    InitProducerIdResponseData,
)

logger = logging.getLogger(__name__)


class TransactionalInit(Protocol):
    """The transaction coordinator's InitProducerId: (error, producer id, epoch)."""

    async def init_producer_id(self, transactional_id: str, timeout_ms: int,
                               expected: tuple[int, int] | None) -> tuple[int, int, int]: ...


class InitProducerIdHandler:
    """InitProducerId. A transactional id goes to the transaction coordinator (without one,
    it is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED). As Kafka's
    TransactionCoordinator, a request with no transactional id always gets a new id at
    epoch 0, also when it names the producer's current id and epoch (an idempotent
    producer's KIP-360 epoch bump)."""

    def __init__(self, producer_ids: ProducerIdManager,
                 transactions: TransactionalInit | None = None,
                 authz: Authorization = ALLOW_ALL) -> None:
        self._producer_ids = producer_ids
        self._transactions = transactions
        self._authz = authz

    def register(self, router: RequestRouter) -> None:
        router.register(ApiKey.INIT_PRODUCER_ID, self.handle, init_producer_id_error)

    async def handle(self, request: DecodedRequest,
                     ctx: RequestContext) -> InitProducerIdResponseData:
        body: InitProducerIdRequestData = request.body
        producer_id, epoch = body.producer_id, body.producer_epoch
        transactional_id = body.transactional_id
        if (producer_id < 0) != (epoch < 0) or transactional_id == "":
            return init_producer_id_error(body, request.api_version, ErrorCode.INVALID_REQUEST)
        code = self._authorization_error(ctx, transactional_id)
        if code:
            return init_producer_id_error(body, request.api_version, code)
        if transactional_id is not None and self._transactions is not None:
            expected = None if producer_id < 0 else (producer_id, epoch)
            code, new_id, new_epoch = await self._transactions.init_producer_id(
                transactional_id, body.transaction_timeout_ms, expected)
            if code == ErrorCode.PRODUCER_FENCED and request.api_version < 4:
                code = ErrorCode.INVALID_PRODUCER_EPOCH  # v4 added PRODUCER_FENCED
            if code:
                return init_producer_id_error(body, request.api_version, code)
            return InitProducerIdResponseData(producer_id=new_id, producer_epoch=new_epoch)
        if transactional_id is not None:
            # No transaction coordinator on this broker. A retriable answer would leave the producer
            # retrying until its timeout; clients treat this one as fatal (InitProducerId
            # has no error message: FindCoordinator, asked first, carries the explanation).
            return init_producer_id_error(body, request.api_version,
                                          ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        try:
            new_id = await self._producer_ids.generate()
        except ProducerIdsUnavailable as exc:
            logger.warning("cannot hand out a producer id: %s", exc)
            return init_producer_id_error(body, request.api_version, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        return InitProducerIdResponseData(producer_id=new_id, producer_epoch=0)

    def _authorization_error(self, ctx: RequestContext, transactional_id: str | None) -> int:
        """Kafka's checks: WRITE on the transactional id; without one, IDEMPOTENT_WRITE on
        the cluster or WRITE on some topic."""
        authz = self._authz
        if transactional_id is not None:
            if not authz.allowed(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                 transactional_id):
                return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        elif not (authz.cluster(ctx, AclOperation.IDEMPOTENT_WRITE)
                  or authz.allowed_on_any(ctx, AclOperation.WRITE, ResourceType.TOPIC)):
            return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return ErrorCode.NONE


def init_producer_id_error(body: InitProducerIdRequestData, version: int, error_code: int,
                           message: str | None = None) -> InitProducerIdResponseData:
    return InitProducerIdResponseData(error_code=error_code, producer_id=-1, producer_epoch=-1)
