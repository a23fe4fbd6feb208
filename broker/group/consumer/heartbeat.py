"""ConsumerGroupHeartbeat request validation and subscriptions (Kafka's decisions). Pure."""

from __future__ import annotations

import functools
import re
import uuid
from typing import Iterable

from broker.group.consumer.model import (LEAVE_GROUP_MEMBER_EPOCH,
                                         LEAVE_GROUP_STATIC_MEMBER_EPOCH, ConsumerMember,
                                         TopicMetadata)
from clients.protocol import ErrorCode
from clients.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequestData,
)

# Topics a regex subscription never matches (Kafka's internal topics).
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state",
                             "__share_group_state"})


class HeartbeatError(Exception):
    """An error answer: Kafka's code and message."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or ErrorCode(code).name)
        self.code = int(code)
        self.message = message


def _not_empty(value: str | None, message: str) -> None:
    if value is not None and not value.strip():
        raise HeartbeatError(ErrorCode.INVALID_REQUEST, message)


@functools.lru_cache(maxsize=256)
def compiled(regex: str) -> re.Pattern[str]:
    """Python's `re`, matched against the whole topic name (Kafka uses RE2J's syntax, which
    agrees with Python's for the usual patterns)."""
    try:
        return re.compile(regex)
    except re.error as exc:
        raise HeartbeatError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                             f"SubscribedTopicRegex {regex!r} is not valid: {exc}") from None


def validate(request: ConsumerGroupHeartbeatRequestData, version: int,
             assignors: Iterable[str]) -> None:
    """Kafka's checks of a heartbeat before it touches any group."""
    member_id = request.member_id
    epoch = request.member_epoch
    names = request.subscribed_topic_names
    regex = request.subscribed_topic_regex
    _not_empty(request.group_id, "GroupId can't be empty.")
    _not_empty(request.instance_id, "InstanceId can't be empty.")
    _not_empty(request.rack_id, "RackId can't be empty.")
    if version >= 1 or epoch != 0:
        # From v1 the consumer makes up its member id (KIP-1082).
        _not_empty(member_id, "MemberId can't be empty.")
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST,
                                 "RebalanceTimeoutMs must be provided in first request.")
        if request.topic_partitions is None or request.topic_partitions:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST,
                                 "TopicPartitions must be empty when (re-)joining.")
        if not names and not regex:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames or "
                                 "SubscribedTopicRegex must be set in first request.")
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if request.instance_id is None:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "InstanceId can't be null.")
    elif epoch < 0 and epoch != LEAVE_GROUP_MEMBER_EPOCH:
        raise HeartbeatError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
    if regex is not None:
        compiled(regex)
    assignor = request.server_assignor
    known = list(assignors)
    if assignor is not None and assignor not in known:
        raise HeartbeatError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                             f"ServerAssignor {assignor} is not supported. Supported "
                             f"assignors: {', '.join(known)}.")


def subscribed_topics(member: ConsumerMember, topics: TopicMetadata) -> frozenset[str]:
    """Names the member subscribes to, explicitly or through its regex, that exist."""
    names = {name for name in member.subscribed_topic_names if name in topics}
    if member.subscribed_topic_regex:
        pattern = compiled(member.subscribed_topic_regex)
        names.update(name for name in topics
                     if name not in INTERNAL_TOPICS and pattern.fullmatch(name))
    return frozenset(names)


def owned_partitions(request: ConsumerGroupHeartbeatRequestData
                     ) -> list[tuple[uuid.UUID, list[int]]] | None:
    """The partitions the member says it owns; None when it did not say (no change)."""
    reported = request.topic_partitions
    if reported is None:
        return None
    return [(t.topic_id, list(t.partitions)) for t in reported]
