"""A consumer's group membership (Kafka's classic protocol) as an I/O-free state machine.

The driver asks ``next_action(now)`` for the next request (or how long to wait), sends it
and feeds the answer to ``handle_response`` (or ``handle_failure``). The application side,
in ``poll``, revokes partitions before a rejoin (``partitions_to_revoke``/``revoked``) and
picks up a new assignment (``take_assignment``), so rebalance listeners run where the
application polls, as in Kafka's consumer. The rebalance protocol is eager (everything is
revoked before joining again) unless every assignor is cooperative (KIP-429): then the
member joins holding its partitions, gives up only those the new assignment takes away,
and joins once more so that they reach their new owner.

FindCoordinator -> JoinGroup (a MEMBER_ID_REQUIRED answer gives the id to join with) ->
leader only: Metadata, then the assignment -> SyncGroup -> Heartbeat every
``heartbeat.interval.ms`` until an answer asks for a rejoin, or (leader) the partition
counts the assignment was computed from change (``metadata_update``).
"""

from __future__ import annotations

import logging
import re
from typing import Any, Iterable, Mapping, Sequence

from clients.common.cluster import BrokerNode, ClusterMetadata, metadata_request
from clients.consumer.group.actions import (
    GroupSettings,
    ClassicMemberState,
    Send,
    Wait,
    join_request,
    sync_request,
)
from clients.consumer.group.assignors import Assignor
from clients.consumer.group.leader import (
    Member,
    compute_assignments,
    counts_changed,
    group_topics,
    read_members,
)
from clients.consumer.group.offsets import ErrorAction, classify
from clients.consumer.group.protocol import TopicPartition, decode_assignment
from clients.protocol import ApiKey, ErrorCode, KafkaError, ProtocolError

__all__ = ["GroupMembership", "GroupSettings", "ClassicMemberState", "Send", "Wait",
           "coordinator_from"]

logger = logging.getLogger(__name__)

FIND_COORDINATOR_VERSION = 3


def coordinator_from(response: Mapping[str, Any]) -> tuple[BrokerNode | None, ErrorCode]:
    """The coordinator a FindCoordinator answer (v3: one key, no ``coordinators`` array)
    names, or None with the error; an answer without a node counts as
    COORDINATOR_NOT_AVAILABLE."""
    code = ErrorCode.from_code(response.get("error_code", 0))
    if code != ErrorCode.NONE:
        return None, code
    if response.get("node_id", -1) < 0:
        return None, ErrorCode.COORDINATOR_NOT_AVAILABLE
    return BrokerNode(response["node_id"], response["host"], response["port"]), code


class GroupMembership:
    """One member's view of its group; see the module docstring for the flow."""

    leave_api_key = ApiKey.LEAVE_GROUP

    def __init__(self, settings: GroupSettings, assignors: Sequence[Assignor]) -> None:
        if not assignors:
            raise ValueError("at least one assignor is needed")
        self.settings = settings
        self.assignors = list(assignors)
        # As Kafka's consumer: cooperative only when every assignor supports it.
        self.cooperative = all(a.cooperative for a in self.assignors)
        self.state = ClassicMemberState.UNJOINED
        self.coordinator: BrokerNode | None = None
        self.member_id = ""
        self.generation_id = -1
        self.protocol_name: str | None = None
        self.subscription: tuple[str, ...] | None = None
        self.rejoin_needed = False
        self.fatal_error: KafkaError | None = None
        self.owned: list[TopicPartition] = []     # what the application holds now
        self._pending: list[TopicPartition] | None = None   # assigned, not yet taken
        self._pending_added: list[TopicPartition] = []      # its partitions not owned now
        self._to_revoke: list[TopicPartition] = []          # cooperative: taken away
        # The last assignment and its generation (the sticky assignor's user data).
        self._last_assigned: list[TopicPartition] = []
        self._last_generation = -1
        self._lost = False                        # owned partitions may be someone else's
        self._inflight: ApiKey | None = None
        self._retry_at = 0.0
        self._members: list[Member] = []          # leader: the members to assign
        self._assignments: dict[str, bytes] = {}
        # Leader: the partition count (None: no such topic) per group topic that the
        # current assignment was computed from; a change means assigning again.
        self._assigned_from: dict[str, int | None] = {}
        self._next_heartbeat = 0.0
        self._last_heartbeat_ok = 0.0
        self._last_poll: float | None = None
        self._poll_expired = False

    # ---- application side ----

    def subscribe(self, topics: Iterable[str] | re.Pattern[str]) -> None:
        if isinstance(topics, re.Pattern):
            raise ValueError("subscribing by pattern needs group.protocol=consumer")
        wanted = tuple(sorted(set(topics)))
        if wanted != self.subscription:
            self.subscription = wanted
            self.rejoin_needed = True

    def unsubscribe(self) -> dict[str, Any] | None:
        """Forget the subscription; returns the LeaveGroup body to send, if any."""
        body = self.leave_request()
        self.subscription = None
        self.rejoin_needed = False
        self._reset_member()
        self.state = ClassicMemberState.UNJOINED
        return body

    def on_poll(self, now: float) -> None:
        """The application polled: it is alive, and may rejoin after a poll timeout."""
        self._last_poll = now
        if self._poll_expired:
            self._poll_expired = False
            self.rejoin_needed = True

    @property
    def active(self) -> bool:
        """Whether this member holds a current generation (commits carry it)."""
        return self.state == ClassicMemberState.STABLE and self.generation_id >= 0

    def partitions_to_revoke(self) -> list[TopicPartition] | None:
        """Owned partitions to give up now, or None when none must go: before rejoining
        (eager: all of them; cooperative: only when they may be lost), or (cooperative)
        those the last assignment took away."""
        if self.cooperative and self._to_revoke and not self._lost:
            return list(self._to_revoke)
        if self.owned and self.rejoin_needed and self.state in (
                ClassicMemberState.STABLE, ClassicMemberState.UNJOINED) and (
                    self._lost or not self.cooperative):
            return list(self.owned)
        return None

    def offset_fetch_member(self) -> tuple[str | None, int]:
        """The member id and epoch OffsetFetch v9 carries: none for a classic group."""
        return None, -1

    @property
    def partitions_lost(self) -> bool:
        """Whether the partitions to revoke may already be another member's (no commit)."""
        return self._lost

    def revoked(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """The application gave up ``partitions`` (None: everything it owned)."""
        if partitions is None:
            self.owned = []
            self._lost = False
            self._to_revoke = []
            return
        gone = set(partitions)
        self.owned = [tp for tp in self.owned if tp not in gone]
        self._to_revoke = [tp for tp in self._to_revoke if tp not in gone]

    def watched_topics(self) -> list[str]:
        """Topics whose metadata the consumer should refresh for this member: its own
        subscription and, for the leader, every topic the group subscribes to."""
        return sorted(set(self.subscription or ()) | set(self._assigned_from))

    def metadata_update(self, counts: Mapping[str, int | None]) -> None:
        """Fresh partition counts (None: the topic does not exist). The leader asks for
        a rebalance when they differ from those it assigned from, as Kafka's consumer
        does, so new partitions and newly created topics get consumed."""
        if self.state != ClassicMemberState.STABLE or self.rejoin_needed:
            return
        changed = counts_changed(self._assigned_from, counts)
        if changed:
            logger.info("group %s: partitions of %s changed since the assignment; "
                        "rebalancing", self.settings.group_id, ", ".join(changed))
            self.rejoin_needed = True

    @property
    def pending_assignment(self) -> list[TopicPartition] | None:
        """The assignment from the last SyncGroup that the application has not taken."""
        return self._pending

    @property
    def pending_added(self) -> list[TopicPartition]:
        """The partitions of the pending assignment this member did not own (the same
        list object until the assignment is taken)."""
        return self._pending_added

    def take_assignment(self) -> list[TopicPartition] | None:
        """The assignment from the last SyncGroup, once; None when there is no new one."""
        pending, self._pending = self._pending, None
        if pending is not None:
            self.owned = list(pending)
            self._lost = False
        return pending

    # ---- driver side ----

    def next_action(self, now: float) -> Send | Wait:
        if self._inflight is not None or self.fatal_error is not None:
            return Wait(None)
        if self.subscription is None:
            return Wait(None)
        if now < self._retry_at:
            return Wait(self._retry_at)
        if self.coordinator is None:
            request = self.find_coordinator_request()
            self._inflight = request.api_key
            return request
        if self.state == ClassicMemberState.STABLE:
            return self._stable_action(now)
        if self.state == ClassicMemberState.UNJOINED:
            if self._poll_expired or not self.rejoin_needed:
                return Wait(None)
            if self.partitions_to_revoke() is not None:
                return Wait(None)    # the application revokes first, in poll
            return self._join()
        if self.state == ClassicMemberState.ASSIGNING:
            return self._send(ApiKey.METADATA, metadata_request(group_topics(self._members)),
                              to_coordinator=False)
        if self.state == ClassicMemberState.SYNCING:
            return self._send(ApiKey.SYNC_GROUP, sync_request(
                self.settings, self.generation_id, self.member_id, self.protocol_name,
                self._assignments))
        return Wait(None)

    def _stable_action(self, now: float) -> Send | Wait:
        max_poll_ms = self.settings.rebalance_timeout_ms
        if self._last_poll is not None and now - self._last_poll > max_poll_ms:
            # As Kafka's consumer: a member that stopped polling leaves, so its partitions
            # move on; it joins again at its next poll.
            logger.warning("no poll for more than max.poll.interval.ms (%d ms): leaving "
                           "group %s", max_poll_ms, self.settings.group_id)
            body = self.leave_request()
            self._reset_member()
            self._lost = True
            self._poll_expired = True
            self.state = ClassicMemberState.UNJOINED
            if body is not None:
                return self._send(ApiKey.LEAVE_GROUP, body)
            return Wait(None)
        if self.rejoin_needed and self.partitions_to_revoke() is None:
            return self._join()
        if now - self._last_heartbeat_ok > self.settings.session_timeout_ms:
            # No heartbeat got through for a whole session: the coordinator is probably
            # gone; find it again (it answers UNKNOWN_MEMBER_ID if the session expired).
            self.coordinator = None
            self._last_heartbeat_ok = now
            return Wait(now)
        if now >= self._next_heartbeat:
            return self._send(ApiKey.HEARTBEAT, {
                "group_id": self.settings.group_id, "generation_id": self.generation_id,
                "member_id": self.member_id,
                "group_instance_id": self.settings.group_instance_id})
        wake = self._next_heartbeat
        if self._last_poll is not None:
            wake = min(wake, self._last_poll + max_poll_ms + 1)
        return Wait(wake)

    def find_coordinator_request(self) -> Send:
        # v3 (one key, Kafka 2.4+) keeps the body simple; v4 only adds batching.
        return Send(ApiKey.FIND_COORDINATOR,
                    {"key": self.settings.group_id, "key_type": 0}, False, None,
                    FIND_COORDINATOR_VERSION)

    def _send(self, api_key: ApiKey, body: dict[str, Any], to_coordinator: bool = True,
              timeout_ms: int | None = None) -> Send:
        self._inflight = api_key
        return Send(api_key, body, to_coordinator, timeout_ms)

    def _join(self) -> Send:
        self.state = ClassicMemberState.JOINING
        self.rejoin_needed = False
        self._pending = None
        self._assigned_from = {}
        assert self.subscription is not None
        owned = self.owned if self.cooperative else []
        body = join_request(self.settings, self.member_id, self.subscription, owned,
                            self.generation_id,
                            [(a.name, a.user_data(self._last_assigned, self._last_generation))
                             for a in self.assignors])
        # The coordinator holds JoinGroup until the rebalance completes (up to the
        # rebalance timeout), so the request may wait that long, as Kafka's client allows.
        timeout = max(self.settings.request_timeout_ms,
                      self.settings.rebalance_timeout_ms + 5000)
        return self._send(ApiKey.JOIN_GROUP, body, timeout_ms=timeout)

    def leave_request(self) -> dict[str, Any] | None:
        """The LeaveGroup body for this member; None when it has nothing to leave.

        Static members (``group.instance.id``) keep their place when closing, as in Kafka.
        """
        if not self.member_id or self.settings.group_instance_id is not None:
            return None
        return {"group_id": self.settings.group_id, "member_id": self.member_id,
                "members": [{"member_id": self.member_id, "group_instance_id": None,
                             "reason": "the consumer is leaving the group"}]}

    def handle_failure(self, api_key: ApiKey, now: float,
                       error: BaseException | None = None) -> None:
        """The request got no answer (connection lost or timed out)."""
        self._inflight = None
        if api_key != ApiKey.FIND_COORDINATOR:
            self.coordinator_dead()
        self._backoff(now)
        self._after_failed_join_step()

    def abandon(self, api_key: ApiKey) -> None:
        """The driver gave up on the request in flight without an answer."""
        self._inflight = None
        if self.state in (ClassicMemberState.JOINING, ClassicMemberState.ASSIGNING,
                          ClassicMemberState.SYNCING):
            self.state = ClassicMemberState.UNJOINED

    def group_error(self, code: ErrorCode, what: str, now: float, generation_id: int,
                    member_id: str) -> None:
        """Apply an error another request (OffsetCommit) sent for ``generation_id`` and
        ``member_id`` got about the membership. Ignored when the member has moved on
        since (as Kafka's consumer does): a stale answer must not reset a newer one.
        A rebalance in progress is news only to a stable member: one that is joining or
        syncing is in that rebalance already, and must not give up its join for it."""
        if (generation_id, member_id) != (self.generation_id, self.member_id) or (
                classify(code) == ErrorAction.REJOIN and self.state != ClassicMemberState.STABLE):
            logger.debug("group %s: ignoring %s from %s for generation %d in state %s",
                         self.settings.group_id, code.name, what, generation_id,
                         self.state.name)
            return
        self._react(code, what, now)

    def coordinator_dead(self) -> None:
        if self.coordinator is not None:
            logger.info("group %s: coordinator %d unavailable, looking it up again",
                        self.settings.group_id, self.coordinator.node_id)
        self.coordinator = None

    def _after_failed_join_step(self) -> None:
        if self.state in (ClassicMemberState.JOINING, ClassicMemberState.ASSIGNING,
                          ClassicMemberState.SYNCING):
            self.state = ClassicMemberState.UNJOINED
            self.rejoin_needed = True

    def handle_response(self, api_key: ApiKey, response: dict[str, Any], now: float) -> None:
        self._inflight = None
        expected = _ANSWER_STATE.get(api_key)
        if expected is not None and self.state != expected:
            # The member moved on while the request was out (left, or was reset):
            # the answer belongs to a join it no longer makes.
            logger.debug("group %s: ignoring a %s answer in state %s",
                         self.settings.group_id, api_key.name, self.state.name)
            return
        handler = {
            ApiKey.FIND_COORDINATOR: self._on_find_coordinator,
            ApiKey.JOIN_GROUP: self._on_join,
            ApiKey.METADATA: self._on_metadata,
            ApiKey.SYNC_GROUP: self._on_sync,
            ApiKey.HEARTBEAT: self._on_heartbeat,
            ApiKey.LEAVE_GROUP: self._on_leave,
        }[api_key]
        handler(response, now)

    # ---- answers ----

    def _backoff(self, now: float) -> None:
        self._retry_at = now + self.settings.retry_backoff_ms

    def _fail(self, code: ErrorCode, what: str) -> None:
        self.fatal_error = KafkaError(code, f"{what} for group {self.settings.group_id} "
                                            f"failed: {code.message}")

    def _react(self, code: ErrorCode, what: str, now: float) -> None:
        """Common reaction to a failed join, sync or heartbeat: a join step in progress
        is over (the member joins again), then whatever ``code`` asks for."""
        self._after_failed_join_step()
        outcome = classify(code)
        if outcome == ErrorAction.FIND_COORDINATOR:
            self.coordinator_dead()
        elif outcome == ErrorAction.REJOIN:
            self.rejoin_needed = True
        elif outcome == ErrorAction.RESET_AND_REJOIN:
            logger.info("group %s: %s answered %s; joining as a new member",
                        self.settings.group_id, what, code.name)
            self._reset_member()
            self._lost = bool(self.owned)
            self.state = ClassicMemberState.UNJOINED
            self.rejoin_needed = True
        elif outcome == ErrorAction.RETRY:
            self._backoff(now)
        else:
            self._fail(code, what)

    def _reset_member(self) -> None:
        self.member_id = ""
        self.generation_id = -1
        self.protocol_name = None
        self._pending = None        # from a generation this member no longer holds
        self._to_revoke = []
        self._assigned_from = {}

    def _on_find_coordinator(self, response: dict[str, Any], now: float) -> None:
        node, code = coordinator_from(response)
        if node is not None:
            self.coordinator = node
            self._last_heartbeat_ok = now
            return
        if code in (ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.INVALID_REQUEST):
            self._fail(code, "FindCoordinator")
            return
        # Typically COORDINATOR_NOT_AVAILABLE while the offsets topic is being created.
        self._backoff(now)

    def _on_join(self, response: dict[str, Any], now: float) -> None:
        code = ErrorCode.from_code(response["error_code"])
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            # The coordinator named us; join again at once with that id.
            self.member_id = response["member_id"]
            self.state = ClassicMemberState.UNJOINED
            self.rejoin_needed = True
            return
        if code != ErrorCode.NONE:
            if code == ErrorCode.REBALANCE_IN_PROGRESS:
                self._backoff(now)
            self._react(code, "JoinGroup", now)
            return
        self.member_id = response["member_id"]
        self.generation_id = response["generation_id"]
        self.protocol_name = response["protocol_name"]
        if response["leader"] != self.member_id:
            self._assignments = {}
            self.state = ClassicMemberState.SYNCING
            return
        members = read_members(self.settings.group_id, response["members"])
        self._members = members
        self.state = ClassicMemberState.ASSIGNING

    def _on_metadata(self, response: dict[str, Any], now: float) -> None:
        cluster = ClusterMetadata.from_response(response)
        counts: dict[str, int] = {}
        self._assigned_from = {}
        for topic in group_topics(self._members):
            count = cluster.partition_count(topic)
            self._assigned_from[topic] = count
            if count is not None:
                counts[topic] = count
            else:
                logger.info("group %s: topic %s has no metadata; not assigned",
                            self.settings.group_id, topic)
        assignor = next((a for a in self.assignors if a.name == self.protocol_name), None)
        if assignor is None:
            self._fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                       f"assignment with unknown protocol {self.protocol_name!r}")
            self._assignments = {}
        else:
            self._assignments = compute_assignments(assignor, self._members, counts)
        self.state = ClassicMemberState.SYNCING

    def _on_sync(self, response: dict[str, Any], now: float) -> None:
        code = ErrorCode.from_code(response["error_code"])
        if code != ErrorCode.NONE:
            self._react(code, "SyncGroup", now)
            return
        try:
            assignment = decode_assignment(response.get("assignment"))
        except ProtocolError as exc:
            self._fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"reading the assignment ({exc})")
            return
        wanted = set(self.subscription or ())
        self._pending = [tp for tp in assignment.partitions if tp[0] in wanted]
        self._last_assigned, self._last_generation = list(self._pending), self.generation_id
        assigned = set(self._pending)
        owned = set(self.owned)
        self._pending_added = [tp for tp in self._pending if tp not in owned]
        if self.cooperative:
            self._to_revoke = [tp for tp in self.owned if tp not in assigned]
            if self._to_revoke:
                # KIP-429: revoke what moved, then join again so it can be handed on.
                self.rejoin_needed = True
        self.state = ClassicMemberState.STABLE
        self._last_heartbeat_ok = now
        self._next_heartbeat = now + self.settings.heartbeat_interval_ms
        logger.info("group %s generation %d: assigned %s", self.settings.group_id,
                    self.generation_id, self._pending)

    def _on_heartbeat(self, response: dict[str, Any], now: float) -> None:
        code = ErrorCode.from_code(response["error_code"])
        if code == ErrorCode.NONE:
            self._last_heartbeat_ok = now
            self._next_heartbeat = now + self.settings.heartbeat_interval_ms
            return
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            # Keep heartbeating until the application has revoked and the join starts.
            self._last_heartbeat_ok = now
            self._next_heartbeat = now + self.settings.heartbeat_interval_ms
        self._react(code, "Heartbeat", now)

    def _on_leave(self, response: dict[str, Any], now: float) -> None:
        code = ErrorCode.from_code(response.get("error_code", 0))
        if code != ErrorCode.NONE:
            logger.debug("group %s: LeaveGroup answered %s", self.settings.group_id, code.name)


# The state a JoinGroup/Metadata/SyncGroup answer is for; in any other it is stale.
_ANSWER_STATE = {ApiKey.JOIN_GROUP: ClassicMemberState.JOINING,
                 ApiKey.METADATA: ClassicMemberState.ASSIGNING,
                 ApiKey.SYNC_GROUP: ClassicMemberState.SYNCING}
