"""Broker lifecycle decisions: registration, heartbeats, fencing, controlled shutdown.

Broker epochs: a registration gets `max(image.offset + 1, previous epoch + 1)`, so epochs
grow with the metadata log like Kafka's (which uses the registration record's offset) and
never repeat for one broker even when two registrations are decided against one image.

"Caught up" means the broker has replayed its own registration record: the offset the
heartbeat tracker saw it at, or the broker epoch when that offset is not known.

The functions return `(records, response)`; they touch `tracker` (contact times) but never
the image. Records must be committed before the response is sent.
"""

from __future__ import annotations

import logging

from clients.protocol import ErrorCode
from clients.protocol.messages.broker_heartbeat import (
    BrokerHeartbeatRequestData,
    BrokerHeartbeatResponseData,
)
from clients.protocol.messages.broker_registration import (
    BrokerRegistrationRequestData,
    BrokerRegistrationResponseData,
)
from metadata.delta import apply_records
from metadata.election import leaderless_changes, leaderships, remove_broker_changes
from metadata.heartbeats import BrokerHeartbeatTracker
from metadata.image import MetadataImage
from metadata.records import (
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistrationChangeRecord,
    FenceBrokerRecord,
    MetadataRecord,
    RegisterBrokerRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)
from metadata.settings import ControllerSettings

logger = logging.getLogger(__name__)

RegistrationDecision = tuple[list[MetadataRecord], BrokerRegistrationResponseData]
HeartbeatDecision = tuple[list[MetadataRecord], BrokerHeartbeatResponseData]


def register_broker(
    image: MetadataImage,
    request: BrokerRegistrationRequestData,
    now_ms: int,
    tracker: BrokerHeartbeatTracker,
    settings: ControllerSettings,
) -> RegistrationDecision:
    """BrokerRegistrationRequest -> records + BrokerRegistrationResponse."""
    broker_id = request.broker_id
    incarnation_id = request.incarnation_id

    def fail(code: int) -> RegistrationDecision:
        return [], BrokerRegistrationResponseData(error_code=code, broker_epoch=-1)

    if settings.cluster_id is not None and request.cluster_id != settings.cluster_id:
        return fail(ErrorCode.INCONSISTENT_CLUSTER_ID)
    existing = image.broker(broker_id)
    if (
        existing is not None
        and existing.incarnation_id != incarnation_id
        and tracker.has_valid_session(broker_id, now_ms, settings.broker_session_timeout_ms)
        # A broker restarted after a clean shutdown proves it is the same node by naming the
        # epoch it had (Kafka 3.7+), so it need not wait for its old session to expire.
        and request.previous_broker_epoch != existing.epoch
    ):
        return fail(ErrorCode.DUPLICATE_BROKER_REGISTRATION)
    features = tuple(
        BrokerFeature(f.name, f.min_supported_version, f.max_supported_version)
        for f in request.features
    )
    for feature in features:
        level = image.features.get(feature.name)
        if level is not None and not (
            feature.min_supported_version <= level <= feature.max_supported_version
        ):
            return fail(ErrorCode.UNSUPPORTED_VERSION)

    epoch = image.offset + 1
    records: list[MetadataRecord] = []
    if existing is not None:
        epoch = max(epoch, existing.epoch + 1)
        # A new registration means the old process is gone: move its duties away first.
        records.extend(remove_broker_changes(image, broker_id, settings))
    records.append(
        RegisterBrokerRecord(
            broker_id=broker_id,
            incarnation_id=incarnation_id,
            broker_epoch=epoch,
            end_points=tuple(
                BrokerEndpoint(ep.name, ep.host, ep.port, ep.security_protocol)
                for ep in request.listeners
            ),
            features=features,
            rack=request.rack,
            fenced=True,
            in_controlled_shutdown=False,
        )
    )
    tracker.touch(broker_id, now_ms)
    logger.info("broker %d registering with epoch %d", broker_id, epoch)
    return records, BrokerRegistrationResponseData(error_code=ErrorCode.NONE, broker_epoch=epoch)


def broker_heartbeat(
    image: MetadataImage,
    request: BrokerHeartbeatRequestData,
    now_ms: int,
    tracker: BrokerHeartbeatTracker,
    settings: ControllerSettings,
) -> HeartbeatDecision:
    """BrokerHeartbeatRequest -> records + BrokerHeartbeatResponse.

    A fenced broker that has caught up is unfenced (and elected where partitions had no
    leader). `want_shut_down` starts controlled shutdown: leaderships move away and the
    broker leaves every ISR that has other members; `should_shut_down` is set on a later
    heartbeat, once the image shows the broker in controlled shutdown and leading nothing.
    """
    broker_id = request.broker_id
    reg = image.broker(broker_id)
    if reg is None or reg.epoch != request.broker_epoch:
        code = ErrorCode.BROKER_ID_NOT_REGISTERED if reg is None else ErrorCode.STALE_BROKER_EPOCH
        return [], _heartbeat_response(code, caught_up=False, fenced=True, shut_down=False)
    tracker.touch(broker_id, now_ms)
    registered_at = tracker.registration_offset(broker_id)
    caught_up = request.current_metadata_offset >= (
        reg.epoch if registered_at is None else registered_at
    )

    records: list[MetadataRecord] = []
    should_shut_down = False
    fenced = reg.fenced
    newly_offline = tracker.report_offline_dirs(broker_id, reg.epoch,
                                                request.offline_log_dirs)
    if newly_offline:
        logger.warning("broker %d reports offline log dirs %s", broker_id,
                       ", ".join(sorted(str(d) for d in newly_offline)))
    if newly_offline and not request.want_shut_down and not reg.fenced:
        # The replicas in a failed dir are gone, and which partitions lived there is only
        # on the broker: move every leadership away and take the broker out of every ISR.
        # Replicas in its healthy dirs catch up and rejoin the ISR as usual.
        records.extend(remove_broker_changes(image, broker_id, settings))
    if request.want_shut_down:
        if (reg.in_controlled_shutdown or reg.fenced) and leaderships(image, broker_id) == 0:
            should_shut_down = True
        else:
            records.extend(controlled_shutdown_records(image, broker_id, settings))
    elif request.want_fence:
        if not reg.fenced:
            records.extend(fence_broker_records(image, broker_id, settings))
            fenced = True
    elif reg.fenced and caught_up:
        unfence = UnfenceBrokerRecord(id=broker_id, epoch=reg.epoch)
        _, unfenced_image = apply_records(image, [unfence])
        records.append(unfence)
        records.extend(leaderless_changes(unfenced_image, broker_id, settings))
        fenced = False
        logger.info("unfencing broker %d", broker_id)
    return records, _heartbeat_response(
        ErrorCode.NONE, caught_up=caught_up, fenced=fenced, shut_down=should_shut_down
    )


def _heartbeat_response(code: int, *, caught_up: bool, fenced: bool,
                        shut_down: bool) -> BrokerHeartbeatResponseData:
    return BrokerHeartbeatResponseData(error_code=code, is_caught_up=caught_up,
                                       is_fenced=fenced, should_shut_down=shut_down)


def fence_broker_records(
    image: MetadataImage, broker_id: int, settings: ControllerSettings
) -> list[MetadataRecord]:
    """Partition changes taking `broker_id` out of ISRs and leaderships, then the fence record."""
    reg = image.broker(broker_id)
    if reg is None:
        return []
    records: list[MetadataRecord] = list(remove_broker_changes(image, broker_id, settings))
    records.append(FenceBrokerRecord(id=broker_id, epoch=reg.epoch))
    return records


def controlled_shutdown_records(
    image: MetadataImage, broker_id: int, settings: ControllerSettings
) -> list[MetadataRecord]:
    """Mark `broker_id` in controlled shutdown (if not yet) and move its duties away."""
    reg = image.broker(broker_id)
    if reg is None:
        return []
    records: list[MetadataRecord] = []
    if not reg.in_controlled_shutdown and not reg.fenced:
        records.append(
            BrokerRegistrationChangeRecord(
                broker_id=broker_id, broker_epoch=reg.epoch, in_controlled_shutdown=1
            )
        )
        logger.info("broker %d entering controlled shutdown", broker_id)
    records.extend(remove_broker_changes(image, broker_id, settings))
    return records


def fence_expired_brokers(
    image: MetadataImage,
    tracker: BrokerHeartbeatTracker,
    now_ms: int,
    settings: ControllerSettings,
) -> list[MetadataRecord]:
    """Fence every unfenced broker whose session expired; each fencing sees the previous ones."""
    records: list[MetadataRecord] = []
    current = image
    for broker_id in tracker.expired(now_ms, settings.broker_session_timeout_ms):
        reg = current.broker(broker_id)
        if reg is None or reg.fenced:
            continue
        logger.info(
            "fencing broker %d: no heartbeat for %d ms", broker_id, settings.broker_session_timeout_ms
        )
        step = fence_broker_records(current, broker_id, settings)
        _, current = apply_records(current, step)
        records.extend(step)
    return records


def unregister_broker(
    image: MetadataImage, broker_id: int, settings: ControllerSettings
) -> tuple[list[MetadataRecord], int]:
    """(records, error_code) removing a broker's registration (UnregisterBroker)."""
    reg = image.broker(broker_id)
    if reg is None:
        return [], ErrorCode.BROKER_ID_NOT_REGISTERED
    records: list[MetadataRecord] = list(remove_broker_changes(image, broker_id, settings))
    records.append(UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=reg.epoch))
    return records, ErrorCode.NONE


def check_broker_epoch(image: MetadataImage, broker_id: int, broker_epoch: int) -> int:
    """NONE if `broker_epoch` is the registered epoch of `broker_id`, else STALE_BROKER_EPOCH."""
    reg = image.broker(broker_id)
    if reg is None or reg.epoch != broker_epoch:
        return ErrorCode.STALE_BROKER_EPOCH
    return ErrorCode.NONE
