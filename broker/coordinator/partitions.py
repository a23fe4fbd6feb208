"""Which partitions of an internal topic (`__consumer_offsets`, `__transaction_state`) a
coordinator on this broker serves, at which coordinator epoch, and where a key's coordinator
is (FindCoordinator)."""

from __future__ import annotations

from dataclasses import dataclass

import trio

from broker.coordinator.topic import InternalTopicCreator
from clients.protocol import ErrorCode
from metadata.image import MetadataImage


@dataclass(frozen=True)
class CoordinatorLocation:
    """Where a key's coordinator is (FindCoordinator's answer for one key): its node's
    endpoint, or an error with no endpoint (node -1)."""

    error_code: int
    node_id: int = -1
    host: str = ""
    port: int = -1
    error_message: str | None = None

    @classmethod
    def failed(cls, code: int, message: str | None = None) -> CoordinatorLocation:
        """No coordinator to name: `code` and, if any, why."""
        return cls(error_code=int(code), error_message=message)


def locate_coordinator(image: MetadataImage, topic_name: str, partition: int,
                       listener_name: str, creator: InternalTopicCreator | None,
                       nursery: trio.Nursery | None) -> CoordinatorLocation:
    """FindCoordinator's answer for a key whose coordinator leads `partition` of
    `topic_name`: the leader's endpoint on `listener_name`, or COORDINATOR_NOT_AVAILABLE
    (asking `creator` to create the topic when it does not exist yet, with its reason)."""
    message: str | None = ErrorCode.COORDINATOR_NOT_AVAILABLE.message
    topic = image.topic(topic_name)
    if topic is None:
        if creator is not None:
            message = creator.ensure(image, nursery) or message
        return CoordinatorLocation.failed(ErrorCode.COORDINATOR_NOT_AVAILABLE, message)
    registration = topic.partitions.get(partition)
    broker = None if registration is None else image.broker(registration.leader)
    endpoint = None if broker is None or broker.fenced else broker.endpoint(listener_name)
    if broker is None or endpoint is None:
        return CoordinatorLocation.failed(ErrorCode.COORDINATOR_NOT_AVAILABLE, message)
    return CoordinatorLocation(error_code=int(ErrorCode.NONE), node_id=broker.broker_id,
                               host=endpoint.host, port=endpoint.port)


def led_partitions(image: MetadataImage, topic_name: str, broker_id: int,
                   caught_up: bool) -> dict[int, int]:
    """The partitions of `topic_name` that `broker_id` leads in `image`, each with its leader
    epoch (the coordinator epoch). None until the broker has caught up with the metadata
    log: the image replayed at start-up is the one the broker last saw, so after a crash it
    still names this broker leader at an epoch another broker has since superseded, and a
    coordinator loaded from it would act (markers, aborts, expiries) for a partition it
    no longer leads."""
    topic = image.topic(topic_name)
    if topic is None or not caught_up:
        return {}
    return {p: reg.leader_epoch for p, reg in topic.partitions.items()
            if reg.leader == broker_id}
