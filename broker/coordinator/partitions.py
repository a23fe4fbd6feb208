"""Which partitions of an internal topic (`__consumer_offsets`, `__transaction_state`) a
coordinator on this broker serves, at which coordinator epoch, and where a key's coordinator
is (FindCoordinator)."""

from __future__ import annotations

from typing import Any

import trio

from broker.coordinator.topic import InternalTopicCreator
from clients.protocol import ErrorCode
from metadata.image import MetadataImage


def locate_coordinator(image: MetadataImage, topic_name: str, partition: int,
                       listener_name: str, creator: InternalTopicCreator | None,
                       nursery: trio.Nursery | None) -> dict[str, Any]:
    """FindCoordinator's answer for a key whose coordinator leads `partition` of
    `topic_name`: the leader's endpoint on `listener_name`, or COORDINATOR_NOT_AVAILABLE
    (asking `creator` to create the topic when it does not exist yet, with its reason)."""
    unavailable = {"error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE, "node_id": -1,
                   "host": "", "port": -1,
                   "error_message": ErrorCode.COORDINATOR_NOT_AVAILABLE.message}
    topic = image.topic(topic_name)
    if topic is None:
        if creator is not None:
            reason = creator.ensure(image, nursery)
            unavailable["error_message"] = reason or unavailable["error_message"]
        return unavailable
    registration = topic.partitions.get(partition)
    broker = None if registration is None else image.broker(registration.leader)
    endpoint = None if broker is None or broker.fenced else broker.endpoint(listener_name)
    if broker is None or endpoint is None:
        return unavailable
    return {"error_code": ErrorCode.NONE, "node_id": broker.broker_id,
            "host": endpoint.host, "port": endpoint.port, "error_message": None}


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
