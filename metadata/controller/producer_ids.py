"""AllocateProducerIds: hand out blocks of producer ids to brokers."""

from __future__ import annotations

from clients.protocol import ErrorCode
from clients.protocol.messages.allocate_producer_ids import (
    AllocateProducerIdsRequestData,
    AllocateProducerIdsResponseData,
)
from metadata.controller.brokers import check_broker_epoch
from metadata.image import MetadataImage
from metadata.records import MetadataRecord, ProducerIdsRecord
from metadata.settings import ControllerSettings

# Producer ids are int64; Kafka refuses to allocate past this point.
_MAX_PRODUCER_ID = 2**63 - 1


def allocate_producer_ids(
    image: MetadataImage,
    request: AllocateProducerIdsRequestData,
    now_ms: int,
    *,
    settings: ControllerSettings,
) -> tuple[list[MetadataRecord], AllocateProducerIdsResponseData]:
    """AllocateProducerIdsRequest -> ProducerIdsRecord + response with the block."""
    broker_id = request.broker_id
    broker_epoch = request.broker_epoch
    code = check_broker_epoch(image, broker_id, broker_epoch)
    if code != ErrorCode.NONE:
        return [], _response(code, -1, 0)
    start = image.next_producer_id
    size = settings.producer_id_block_size
    if start > _MAX_PRODUCER_ID - size:
        return [], _response(ErrorCode.UNKNOWN_SERVER_ERROR, -1, 0)
    record = ProducerIdsRecord(broker_id=broker_id, broker_epoch=broker_epoch, next_producer_id=start + size)
    return [record], _response(ErrorCode.NONE, start, size)


def _response(code: int, start: int, length: int) -> AllocateProducerIdsResponseData:
    return AllocateProducerIdsResponseData(error_code=code, producer_id_start=start,
                                           producer_id_len=length)
