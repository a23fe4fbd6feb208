"""A consumer's membership under the consumer group protocol of KIP-848
(``group.protocol=consumer``) as an I/O-free state machine.

It offers the driver (``trio_group.GroupClient``) and the consumer's ``poll``
(``subscription.SubscriptionDriver``) the same surface as the classic ``GroupMembership``.
The coordinator assigns: the member heartbeats ConsumerGroupHeartbeat at the interval the
coordinator gives, joining with epoch 0 and its subscription; an answer carrying a new
target assignment (topic ids) starts a reconciliation, which ``poll`` carries out: revoke
what is no longer assigned (after the auto-commit), then take on what is new, and the next
heartbeat, sent at once, acknowledges by listing the partitions owned. A fenced member
(FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID) gives up its partitions as lost and joins again
with epoch 0. Leaving is a heartbeat with epoch -1 (-2 for a static member).
"""

from __future__ import annotations

import logging
import math
import re
import uuid
from enum import Enum
from typing import Any, Iterable, Mapping

from clients.common.cluster import BrokerNode, ClusterMetadata, metadata_request
from clients.consumer.group.actions import GroupSettings, Send, Wait
from clients.consumer.group.member_assignment import MemberAssignment
from clients.consumer.group.membership import FIND_COORDINATOR_VERSION, coordinator_from
from clients.consumer.group.offsets import ErrorAction, classify
from clients.consumer.group.protocol import TopicPartition
from clients.consumer.group.reconcile import JOIN_EPOCH, HeartbeatFields, read_assignment
from clients.protocol import ApiKey, ErrorCode, KafkaError

__all__ = ["ConsumerGroupMember", "ConsumerMemberState"]

logger = logging.getLogger(__name__)

# Errors that end the membership for good, as in Kafka's client.
_FATAL = frozenset({
    ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ErrorCode.INVALID_REQUEST, ErrorCode.GROUP_MAX_SIZE_REACHED,
    ErrorCode.UNSUPPORTED_ASSIGNOR, ErrorCode.UNRELEASED_INSTANCE_ID,
    ErrorCode.UNSUPPORTED_VERSION, ErrorCode.INVALID_REGULAR_EXPRESSION})
_FENCED = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})


class ConsumerMemberState(Enum):
    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"      # heartbeats with epoch 0 until the coordinator gives one
    STABLE = "stable"        # a member; reconciliations happen in this state
    FENCED = "fenced"        # releasing its partitions as lost, then joins again
    STALE = "stale"          # left after max.poll.interval.ms; joins at the next poll


class ConsumerGroupMember:
    """One member of a KIP-848 consumer group; see the module docstring."""

    leave_api_key = ApiKey.CONSUMER_GROUP_HEARTBEAT

    def __init__(self, settings: GroupSettings, server_assignor: str | None = None) -> None:
        self.settings = settings
        self.server_assignor = server_assignor
        self.state = ConsumerMemberState.UNSUBSCRIBED
        self.coordinator: BrokerNode | None = None
        # Kafka's client names itself (ConsumerGroupHeartbeat v1); an answer may rename it.
        self.member_id = str(uuid.uuid4())
        self.member_epoch = -1
        self.subscription: tuple[str, ...] | None = None
        self.subscription_regex: str | None = None     # subscribed by pattern
        self.rejoin_needed = False            # the coordinator rebalances by itself
        self.fatal_error: KafkaError | None = None
        self.assignment = MemberAssignment()
        self.heartbeat_interval_ms = settings.heartbeat_interval_ms
        self._fields = HeartbeatFields()
        self._metadata_at = 0.0     # when to ask for topic names again
        self._inflight: ApiKey | None = None
        self._retry_at = 0.0
        self._next_heartbeat = 0.0
        self._news = False          # something to tell the coordinator without delay
        self._last_poll: float | None = None

    # ---- what the consumer reads ----

    @property
    def generation_id(self) -> int:
        """The member epoch (commits carry it as the generation)."""
        return self.member_epoch

    @property
    def active(self) -> bool:
        return self.state == ConsumerMemberState.STABLE and self.member_epoch > 0

    @property
    def owned(self) -> list[TopicPartition]:
        return self.assignment.owned

    @property
    def partitions_lost(self) -> bool:
        return self.assignment.lost

    @property
    def pending_assignment(self) -> list[TopicPartition] | None:
        return self.assignment.pending

    @property
    def pending_added(self) -> list[TopicPartition]:
        return self.assignment.pending_added

    def offset_fetch_member(self) -> tuple[str | None, int]:
        """The member id and epoch OffsetFetch v9 carries (none before joining)."""
        if self.member_epoch > 0:
            return self.member_id, self.member_epoch
        return None, -1

    def watched_topics(self) -> list[str]:
        return sorted(self.subscription or ())

    def metadata_update(self, counts: Mapping[str, int | None]) -> None:
        """Partition changes are the coordinator's to notice: nothing to do here."""

    # ---- application side ----

    def subscribe(self, topics: Iterable[str] | re.Pattern[str]) -> None:
        """Subscribe to ``topics``, or the topics a compiled pattern matches."""
        if isinstance(topics, re.Pattern):
            self.subscribe_pattern(topics.pattern)
            return
        wanted = tuple(sorted(set(topics)))
        if wanted != self.subscription or self.subscription_regex is not None:
            self.subscription, self.subscription_regex = wanted, None
            self._subscription_changed()

    def subscribe_pattern(self, regex: str) -> None:
        """Subscribe to the topics matching ``regex``; the coordinator matches them."""
        if regex != self.subscription_regex:
            self.subscription, self.subscription_regex = (), regex
            self._subscription_changed()

    def _subscription_changed(self) -> None:
        if self.state == ConsumerMemberState.UNSUBSCRIBED:
            self._start_joining()
        else:
            self._heartbeat_soon()    # tell the coordinator now

    def unsubscribe(self) -> dict[str, Any] | None:
        """Forget the subscription; returns the leaving heartbeat to send, if any."""
        body = None
        if self.member_epoch > 0 or self.state == ConsumerMemberState.JOINING:
            body = self._fields.leave(group_id=self.settings.group_id,
                                      member_id=self.member_id,
                                      instance_id=self.settings.group_instance_id)
        self.subscription = self.subscription_regex = None
        self.state = ConsumerMemberState.UNSUBSCRIBED
        self.member_epoch = -1
        self.assignment.forget()
        return body

    def on_poll(self, now: float) -> None:
        self._last_poll = now
        if self.state == ConsumerMemberState.STALE and not self.owned:
            self._start_joining()

    def partitions_to_revoke(self) -> list[TopicPartition] | None:
        """Owned partitions to give up now: all of them when lost (fenced, or out of the
        group after a poll timeout), else those the reconciliation revokes."""
        return self.assignment.partitions_to_revoke()

    def revoked(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self.assignment.revoked(partitions)
        if self.state == ConsumerMemberState.FENCED and not self.owned:
            self._start_joining()

    def take_assignment(self) -> list[TopicPartition] | None:
        """The application holds the new assignment: acknowledge it at once (the owned
        partitions changed, so the heartbeat lists them), then reconcile any newer
        target."""
        pending = self.assignment.take()
        if pending is not None:
            self._heartbeat_soon()
            self._reconcile()
        return pending

    # ---- driver side ----

    def next_action(self, now: float) -> Send | Wait:
        if self._inflight is not None or self.fatal_error is not None:
            return Wait(None)
        if self.subscription is None or self.state == ConsumerMemberState.UNSUBSCRIBED:
            return Wait(None)
        if now < self._retry_at:
            return Wait(self._retry_at)
        if self.coordinator is None:
            request = self.find_coordinator_request()
            self._inflight = request.api_key
            return request
        if self.state == ConsumerMemberState.STALE:
            return Wait(None)
        if self.state == ConsumerMemberState.FENCED:
            return Wait(None)    # the application releases its partitions first, in poll
        max_poll_ms = self.settings.rebalance_timeout_ms
        if self._last_poll is not None and now - self._last_poll > max_poll_ms:
            return self._leave_for_poll_timeout(max_poll_ms)
        if self.assignment.metadata_wanted and now >= self._metadata_at:
            self._metadata_at = math.inf      # until the answer
            # A pattern's topics are the coordinator's to know: ask about every topic.
            topics = None if self.subscription_regex is not None else self.subscription
            return self._send(ApiKey.METADATA, metadata_request(topics),
                              to_coordinator=False)
        if now >= self._next_heartbeat:
            self._news = False
            return self._send(ApiKey.CONSUMER_GROUP_HEARTBEAT, self._heartbeat())
        wake = self._next_heartbeat
        if self.assignment.metadata_wanted:
            wake = min(wake, self._metadata_at)
        if self._last_poll is not None:
            wake = min(wake, self._last_poll + max_poll_ms + 1)
        return Wait(wake)

    def find_coordinator_request(self) -> Send:
        return Send(ApiKey.FIND_COORDINATOR, {"key": self.settings.group_id, "key_type": 0},
                    False, None, FIND_COORDINATOR_VERSION)

    def handle_response(self, api_key: ApiKey, response: dict[str, Any], now: float) -> None:
        self._inflight = None
        if api_key == ApiKey.FIND_COORDINATOR:
            self._on_find_coordinator(response, now)
        elif api_key == ApiKey.METADATA:
            self._on_metadata(response, now)
        elif api_key == ApiKey.CONSUMER_GROUP_HEARTBEAT:
            if self.state in (ConsumerMemberState.JOINING, ConsumerMemberState.STABLE):
                self._on_heartbeat(response, now)

    def handle_failure(self, api_key: ApiKey, now: float,
                       error: BaseException | None = None) -> None:
        """The request got no answer, or could not be sent (``error``)."""
        self._inflight = None
        self._fields.reset()
        if isinstance(error, KafkaError) and error.code == ErrorCode.UNSUPPORTED_VERSION:
            self._fail(ErrorCode.UNSUPPORTED_VERSION,
                       "the broker does not support the consumer group protocol; "
                       "set group.protocol=classic", api_key.name)
            return
        if api_key == ApiKey.METADATA:
            self._metadata_at = now + self.settings.retry_backoff_ms
        elif api_key != ApiKey.FIND_COORDINATOR:
            self.coordinator_dead()
        self._retry_at = now + self.settings.retry_backoff_ms

    def abandon(self, api_key: ApiKey) -> None:
        self._inflight = None
        self._fields.reset()

    def group_error(self, code: ErrorCode, what: str, now: float, generation_id: int,
                    member_id: str) -> None:
        """An error an OffsetCommit for ``generation_id`` got about the membership."""
        if (generation_id, member_id) != (self.member_epoch, self.member_id):
            return
        if code in _FENCED:
            self._fence(code, what)

    def coordinator_dead(self) -> None:
        if self.coordinator is not None:
            logger.info("group %s: coordinator %d unavailable, looking it up again",
                        self.settings.group_id, self.coordinator.node_id)
        self.coordinator = None

    # ---- internals ----

    def _heartbeat_soon(self) -> None:
        self._next_heartbeat = 0.0
        self._news = True

    def _send(self, api_key: ApiKey, body: dict[str, Any], to_coordinator: bool = True
              ) -> Send:
        self._inflight = api_key
        return Send(api_key, body, to_coordinator)

    def _heartbeat(self) -> dict[str, Any]:
        return self._fields.request(
            group_id=self.settings.group_id, member_id=self.member_id,
            member_epoch=self.member_epoch, instance_id=self.settings.group_instance_id,
            rebalance_timeout_ms=self.settings.rebalance_timeout_ms,
            subscription=self.subscription or (), server_assignor=self.server_assignor,
            owned=self.owned, topic_ids=self.assignment.ids,
            full=self.state == ConsumerMemberState.JOINING, regex=self.subscription_regex,
            rack_id=self.settings.rack_id)

    def _start_joining(self) -> None:
        self.state = ConsumerMemberState.JOINING
        self.member_epoch = JOIN_EPOCH
        self._fields.reset()
        self.assignment.forget()
        self._next_heartbeat = 0.0

    def _fence(self, code: ErrorCode, what: str) -> None:
        logger.info("group %s: %s answered %s; releasing the partitions and joining again",
                    self.settings.group_id, what, code.name)
        self.member_epoch = JOIN_EPOCH
        self.assignment.lose()
        if self.owned:
            self.state = ConsumerMemberState.FENCED
        else:
            self._start_joining()

    def _leave_for_poll_timeout(self, max_poll_ms: int) -> Send:
        # As Kafka's consumer: a member that stopped polling leaves so that its partitions
        # move on; it joins again at its next poll.
        logger.warning("no poll for more than max.poll.interval.ms (%d ms): leaving "
                       "group %s", max_poll_ms, self.settings.group_id)
        body = self._fields.leave(group_id=self.settings.group_id, member_id=self.member_id,
                                  instance_id=self.settings.group_instance_id)
        self.state = ConsumerMemberState.STALE
        self.member_epoch = -1
        self.assignment.lose()
        return self._send(ApiKey.CONSUMER_GROUP_HEARTBEAT, body)

    def _fail(self, code: ErrorCode, message: str, what: str) -> None:
        self.fatal_error = KafkaError(code, f"{what} for group {self.settings.group_id} "
                                            f"failed: {message}")

    def _on_find_coordinator(self, response: dict[str, Any], now: float) -> None:
        node, code = coordinator_from(response)
        if node is not None:
            self.coordinator = node
            return
        if code in (ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.INVALID_REQUEST):
            self._fail(code, code.message, "FindCoordinator")
            return
        self._retry_at = now + self.settings.retry_backoff_ms

    def _on_metadata(self, response: dict[str, Any], now: float) -> None:
        # A topic just created may not be in every broker's metadata yet: ask again
        # after the backoff while some topic id stays unnamed.
        self._metadata_at = now + self.settings.retry_backoff_ms
        self.assignment.learn_topics(ClusterMetadata.from_response(response))
        self._reconcile()

    def _on_heartbeat(self, response: dict[str, Any], now: float) -> None:
        code = ErrorCode.from_code(response["error_code"])
        if code != ErrorCode.NONE:
            self._fields.reset()
            self._on_heartbeat_error(code, response.get("error_message") or code.message, now)
            return
        if response.get("member_id"):
            self.member_id = response["member_id"]
        self.member_epoch = response["member_epoch"]
        if response.get("heartbeat_interval_ms", 0) > 0:
            self.heartbeat_interval_ms = response["heartbeat_interval_ms"]
        # News since that heartbeat left (an assignment taken on, a new subscription)
        # goes at once rather than an interval later.
        self._next_heartbeat = now if self._news else now + self.heartbeat_interval_ms
        if self.state == ConsumerMemberState.JOINING:
            self.state = ConsumerMemberState.STABLE
        target = read_assignment(response.get("assignment"))
        if target is not None:
            self.assignment.target = target
            self._reconcile()

    def _on_heartbeat_error(self, code: ErrorCode, message: str, now: float) -> None:
        if code in _FENCED:
            self._fence(code, "ConsumerGroupHeartbeat")
        elif code in _FATAL:
            if code == ErrorCode.UNSUPPORTED_VERSION:
                message = ("the broker does not support the consumer group protocol; "
                           "set group.protocol=classic")
            self._fail(code, message, "ConsumerGroupHeartbeat")
        elif classify(code) == ErrorAction.FIND_COORDINATOR:
            self.coordinator_dead()
        elif code.retriable:
            self._retry_at = now + self.settings.retry_backoff_ms
        else:
            self._fail(code, message, "ConsumerGroupHeartbeat")

    def _reconcile(self) -> None:
        if self.state != ConsumerMemberState.STABLE:
            return
        step = self.assignment.reconcile()
        if step is not None:
            logger.info("group %s epoch %d: revoking %s, assigning %s",
                        self.settings.group_id, self.member_epoch, list(step.revoke),
                        list(step.add))
