"""AllocateProducerIds: hand out blocks of producer ids to brokers."""

from __future__ import annotations

from typing import Any

from clients.protocol import ErrorCode
from metadata.controller import Decision
from metadata.controller.brokers import check_broker_epoch
from metadata.image import MetadataImage
from metadata.records import ProducerIdsRecord
from metadata.settings import ControllerSettings

# Producer ids are int64; Kafka refuses to allocate past this point.
_MAX_PRODUCER_ID = 2**63 - 1


def allocate_producer_ids(
    image: MetadataImage,
    request: dict[str, Any],
    now_ms: int,
    *,
    settings: ControllerSettings,
) -> Decision:
    """AllocateProducerIdsRequest -> ProducerIdsRecord + response with the block."""
    broker_id = request["broker_id"]
    broker_epoch = request["broker_epoch"]
    code = check_broker_epoch(image, broker_id, broker_epoch)
    if code != ErrorCode.NONE:
        return [], _response(code, -1, 0)
    start = image.next_producer_id
    size = settings.producer_id_block_size
    if start > _MAX_PRODUCER_ID - size:
        return [], _response(ErrorCode.UNKNOWN_SERVER_ERROR, -1, 0)
    record = ProducerIdsRecord(broker_id=broker_id, broker_epoch=broker_epoch, next_producer_id=start + size)
    return [record], _response(ErrorCode.NONE, start, size)


def _response(code: int, start: int, length: int) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "producer_id_start": start, "producer_id_len": length}
