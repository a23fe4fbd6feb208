"""A consumer's group membership (Kafka's classic protocol) as an I/O-free state machine.

The driver asks ``next_action(now)`` for the next request (or how long to wait), sends it
and feeds the answer to ``handle_response`` (or ``handle_failure``). The application side,
in ``poll``, revokes partitions before a rejoin (``partitions_to_revoke``/``revoked``) and
picks up a new assignment (``take_assignment``), so rebalance listeners run where the
application polls, as in Kafka's consumer. The assignment protocol is eager: everything is
revoked before joining again.

FindCoordinator -> JoinGroup (a MEMBER_ID_REQUIRED answer gives the id to join with) ->
leader only: Metadata, then the assignment -> SyncGroup -> Heartbeat every
``heartbeat.interval.ms`` until an answer asks for a rejoin.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterable, Sequence

from clients.admin.cluster import BrokerNode, ClusterMetadata, metadata_request
from clients.consumer.group.assignors import Assignor, MemberSubscription
from clients.consumer.group.offsets import Outcome, classify
from clients.consumer.group.protocol import (
    ASSIGNMENT_MAX_VERSION,
    PROTOCOL_TYPE,
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from clients.protocol import ApiKey, ErrorCode, KafkaError, ProtocolError

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

FIND_COORDINATOR_VERSION = 3


class MemberState(Enum):
    UNJOINED = "unjoined"
    JOINING = "joining"              # JoinGroup sent
    ASSIGNING = "assigning"          # leader: reading partition counts to assign
    SYNCING = "syncing"              # SyncGroup sent
    STABLE = "stable"


@dataclass(frozen=True)
class Send:
    """Send ``body`` as ``api_key``: to the coordinator, or to any broker when not."""

    api_key: ApiKey
    body: dict[str, Any]
    to_coordinator: bool
    timeout_ms: int | None = None
    version: int | None = None      # None: the highest both sides support


@dataclass(frozen=True)
class Wait:
    """Nothing to send before ``until_ms`` (None: until something changes)."""

    until_ms: float | None


@dataclass(frozen=True)
class GroupSettings:
    group_id: str
    session_timeout_ms: int = 45000
    rebalance_timeout_ms: int = 300000
    heartbeat_interval_ms: int = 3000
    retry_backoff_ms: int = 100
    request_timeout_ms: int = 30000
    group_instance_id: str | None = None


class GroupMembership:
    """One member's view of its group; see the module docstring for the flow."""

    def __init__(self, settings: GroupSettings, assignors: Sequence[Assignor]) -> None:
        if not assignors:
            raise ValueError("at least one assignor is needed")
        self.settings = settings
        self.assignors = list(assignors)
        self.state = MemberState.UNJOINED
        self.coordinator: BrokerNode | None = None
        self.member_id = ""
        self.generation_id = -1
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.subscription: tuple[str, ...] | None = None
        self.rejoin_needed = False
        self.fatal_error: KafkaError | None = None
        self.owned: list[TopicPartition] = []     # what the application holds now
        self._pending: list[TopicPartition] | None = None   # assigned, not yet taken
        self._lost = False                        # owned partitions may be someone else's
        self._inflight: ApiKey | None = None
        self._retry_at = 0.0
        self._members: list[tuple[MemberSubscription, int]] = []   # leader: (member, version)
        self._assignments: dict[str, bytes] = {}
        self._next_heartbeat = 0.0
        self._last_heartbeat_ok = 0.0
        self._last_poll: float | None = None
        self._poll_expired = False

    # ---- application side ----

    def subscribe(self, topics: Iterable[str]) -> None:
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
        self.state = MemberState.UNJOINED
        self._pending = None
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
        return self.state == MemberState.STABLE and self.generation_id >= 0

    def partitions_to_revoke(self) -> list[TopicPartition] | None:
        """Owned partitions to give up before rejoining, or None when none must go."""
        if self.owned and self.rejoin_needed and self.state in (
                MemberState.STABLE, MemberState.UNJOINED):
            return list(self.owned)
        return None

    @property
    def partitions_lost(self) -> bool:
        """Whether the partitions to revoke may already be another member's (no commit)."""
        return self._lost

    def revoked(self) -> None:
        self.owned = []
        self._lost = False

    @property
    def pending_assignment(self) -> list[TopicPartition] | None:
        """The assignment from the last SyncGroup that the application has not taken."""
        return self._pending

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
        if self.state == MemberState.STABLE:
            return self._stable_action(now)
        if self.state == MemberState.UNJOINED:
            if self._poll_expired or not self.rejoin_needed:
                return Wait(None)
            if self.partitions_to_revoke() is not None:
                return Wait(None)    # the application revokes first, in poll
            return self._join()
        if self.state == MemberState.ASSIGNING:
            topics = sorted({t for m, _ in self._members for t in m.topics})
            return self._send(ApiKey.METADATA, metadata_request(topics), to_coordinator=False)
        if self.state == MemberState.SYNCING:
            return self._send(ApiKey.SYNC_GROUP, self._sync_request())
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
            self.state = MemberState.UNJOINED
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
        self.state = MemberState.JOINING
        self.rejoin_needed = False
        self._pending = None
        assert self.subscription is not None
        subscription = Subscription(self.subscription,
                                    owned_partitions=tuple(sorted(self.owned)))
        metadata = encode_subscription(subscription)
        body = {
            "group_id": self.settings.group_id,
            "session_timeout_ms": self.settings.session_timeout_ms,
            "rebalance_timeout_ms": self.settings.rebalance_timeout_ms,
            "member_id": self.member_id,
            "group_instance_id": self.settings.group_instance_id,
            "protocol_type": PROTOCOL_TYPE,
            "protocols": [{"name": a.name, "metadata": metadata} for a in self.assignors],
            "reason": None,
        }
        # The coordinator holds JoinGroup until the rebalance completes (up to the
        # rebalance timeout), so the request may wait that long, as Kafka's client allows.
        timeout = max(self.settings.request_timeout_ms,
                      self.settings.rebalance_timeout_ms + 5000)
        return self._send(ApiKey.JOIN_GROUP, body, timeout_ms=timeout)

    def _sync_request(self) -> dict[str, Any]:
        return {"group_id": self.settings.group_id, "generation_id": self.generation_id,
                "member_id": self.member_id,
                "group_instance_id": self.settings.group_instance_id,
                "protocol_type": PROTOCOL_TYPE, "protocol_name": self.protocol_name,
                "assignments": [{"member_id": m, "assignment": a}
                                for m, a in self._assignments.items()]}

    def leave_request(self) -> dict[str, Any] | None:
        """The LeaveGroup body for this member; None when it has nothing to leave.

        Static members (``group.instance.id``) keep their place when closing, as in Kafka.
        """
        if not self.member_id or self.settings.group_instance_id is not None:
            return None
        return {"group_id": self.settings.group_id, "member_id": self.member_id,
                "members": [{"member_id": self.member_id, "group_instance_id": None,
                             "reason": "the consumer is leaving the group"}]}

    def handle_failure(self, api_key: ApiKey, now: float) -> None:
        """The request got no answer (connection lost or timed out)."""
        self._inflight = None
        if api_key != ApiKey.FIND_COORDINATOR:
            self.coordinator_dead()
        self._retry_at = now + self.settings.retry_backoff_ms
        self._after_failed_join_step()

    def abandon(self, api_key: ApiKey) -> None:
        """The driver gave up on the request in flight without an answer."""
        self._inflight = None
        if self.state in (MemberState.JOINING, MemberState.ASSIGNING, MemberState.SYNCING):
            self.state = MemberState.UNJOINED

    def group_error(self, code: ErrorCode, what: str, now: float) -> None:
        """Apply an error another request (OffsetCommit) got about the membership."""
        self._react(code, what, now)

    def coordinator_dead(self) -> None:
        if self.coordinator is not None:
            logger.info("group %s: coordinator %d unavailable, looking it up again",
                        self.settings.group_id, self.coordinator.node_id)
        self.coordinator = None

    def _after_failed_join_step(self) -> None:
        if self.state in (MemberState.JOINING, MemberState.ASSIGNING, MemberState.SYNCING):
            self.state = MemberState.UNJOINED
            self.rejoin_needed = True

    def handle_response(self, api_key: ApiKey, response: dict[str, Any], now: float) -> None:
        self._inflight = None
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
        """Common reaction to a failed join, sync or heartbeat."""
        outcome = classify(code)
        if outcome == Outcome.FIND_COORDINATOR:
            self.coordinator_dead()
            self._after_failed_join_step()
        elif outcome == Outcome.REJOIN:
            self.state = MemberState.UNJOINED if self.state != MemberState.STABLE \
                else self.state
            self.rejoin_needed = True
        elif outcome == Outcome.RESET_AND_REJOIN:
            logger.info("group %s: %s answered %s; joining as a new member",
                        self.settings.group_id, what, code.name)
            self._reset_member()
            self._lost = bool(self.owned)
            self.state = MemberState.UNJOINED
            self.rejoin_needed = True
        elif outcome == Outcome.RETRY:
            self._after_failed_join_step()
            self._backoff(now)
        else:
            self._fail(code, what)

    def _reset_member(self) -> None:
        self.member_id = ""
        self.generation_id = -1
        self.leader_id = None
        self.protocol_name = None

    def _on_find_coordinator(self, response: dict[str, Any], now: float) -> None:
        entry = (response.get("coordinators") or [response])[0]
        code = ErrorCode.from_code(entry.get("error_code", 0))
        if code == ErrorCode.NONE and entry.get("node_id", -1) >= 0:
            self.coordinator = BrokerNode(entry["node_id"], entry["host"], entry["port"])
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
            self.state = MemberState.UNJOINED
            self.rejoin_needed = True
            return
        if code != ErrorCode.NONE:
            if code == ErrorCode.REBALANCE_IN_PROGRESS:
                self._backoff(now)
            self._react(code, "JoinGroup", now)
            if self.state == MemberState.JOINING:
                self.state = MemberState.UNJOINED
            return
        self.member_id = response["member_id"]
        self.generation_id = response["generation_id"]
        self.protocol_name = response["protocol_name"]
        self.leader_id = response["leader"]
        if self.leader_id != self.member_id:
            self._assignments = {}
            self.state = MemberState.SYNCING
            return
        members: list[tuple[MemberSubscription, int]] = []
        for member in response["members"]:
            try:
                sub = decode_subscription(member["metadata"])
            except ProtocolError as exc:
                logger.warning("group %s: member %s sent unreadable metadata (%s); it gets "
                               "nothing", self.settings.group_id, member["member_id"], exc)
                sub = Subscription(())
            members.append((MemberSubscription(member["member_id"], sub.topics,
                                               member.get("group_instance_id")),
                            sub.version))
        self._members = members
        self.state = MemberState.ASSIGNING

    def _on_metadata(self, response: dict[str, Any], now: float) -> None:
        cluster = ClusterMetadata.from_response(response)
        counts: dict[str, int] = {}
        for topic in {t for m, _ in self._members for t in m.topics}:
            count = cluster.partition_count(topic)
            if count is not None:
                counts[topic] = count
            else:
                logger.info("group %s: topic %s has no metadata; not assigned",
                            self.settings.group_id, topic)
        self._assignments = self.compute_assignments(counts)
        self.state = MemberState.SYNCING

    def compute_assignments(self, partition_counts: dict[str, int]) -> dict[str, bytes]:
        """Leader: every member's assignment bytes under the chosen protocol."""
        assignor = next((a for a in self.assignors if a.name == self.protocol_name), None)
        if assignor is None:
            self._fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                       f"assignment with unknown protocol {self.protocol_name!r}")
            return {}
        chosen = assignor.assign(partition_counts, [m for m, _ in self._members])
        # Encode at the lowest subscription version in the group, so every member can read it.
        version = min([v for _, v in self._members] + [ASSIGNMENT_MAX_VERSION])
        return {m.member_id: encode_assignment(Assignment(tuple(chosen.get(m.member_id, ())),
                                                          None, max(version, 0)))
                for m, _ in self._members}

    def _on_sync(self, response: dict[str, Any], now: float) -> None:
        code = ErrorCode.from_code(response["error_code"])
        if code != ErrorCode.NONE:
            self._react(code, "SyncGroup", now)
            if self.state == MemberState.SYNCING:
                self.state = MemberState.UNJOINED
                self.rejoin_needed = True
            return
        try:
            assignment = decode_assignment(response.get("assignment"))
        except ProtocolError as exc:
            self._fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"reading the assignment ({exc})")
            return
        wanted = set(self.subscription or ())
        self._pending = [tp for tp in assignment.partitions if tp[0] in wanted]
        self.state = MemberState.STABLE
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
