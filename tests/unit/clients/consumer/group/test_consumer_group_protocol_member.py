"""The consumer group protocol (KIP-848) on the consumer's side, without I/O: the
reconciliation decisions, which heartbeat fields go when, the member state machine driven
by hand-written coordinator answers, and the ``group.protocol`` configuration."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
import trio

from clients.common.settings import ConfigError
from clients.consumer.config import ConsumerConfig
from clients.consumer.group import GroupMembership, make_assignors
from clients.consumer.group.actions import GroupSettings, Send, Wait
from clients.consumer.group.consumer_member import ConsumerGroupMember, ConsumerMemberState
from clients.consumer.group.offsets import CommitFailedError
from clients.consumer.group.reconcile import (
    HeartbeatFields,
    read_assignment,
    reconcile,
    resolve,
)
from clients.consumer.group.trio_group import GroupClient
from clients.protocol import ApiKey, ErrorCode, KafkaError
from clients.protocol.fit import fit_request

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
NAMES = {T1: "t1", T2: "t2"}

# ---- pure decisions ----


def test_reconcile_revokes_what_left_and_adds_only_what_is_new() -> None:
    step = reconcile([("t1", 0), ("t1", 1)], [("t1", 1), ("t2", 0)])
    assert step.revoke == (("t1", 0),)
    assert step.add == (("t2", 0),)
    assert step.assignment == (("t1", 1), ("t2", 0))
    assert not reconcile([("t1", 0)], [("t1", 0)]).changes


def test_resolve_keeps_unknown_topic_ids_waiting() -> None:
    target = read_assignment({"topic_partitions": [{"topic_id": T1, "partitions": [1, 0]},
                                                   {"topic_id": T2, "partitions": [0]}]})
    assert target is not None
    resolved = resolve(target, {T1: "t1"})
    assert resolved.partitions == (("t1", 0), ("t1", 1))
    assert resolved.unknown_ids == {T2}
    assert read_assignment(None) is None


def test_heartbeat_sends_everything_when_joining_then_only_changes() -> None:
    fields = HeartbeatFields()
    common: dict[str, Any] = dict(group_id="g", member_id="m", instance_id=None,
                                  rebalance_timeout_ms=300000, server_assignor="uniform",
                                  topic_ids={"t1": T1})
    first = fields.request(member_epoch=0, subscription=["t1"], owned=[], full=True,
                           rack_id="rack-a", **common)
    assert first["rack_id"] == "rack-a"       # client.rack, sent when joining
    assert first["rebalance_timeout_ms"] == 300000
    assert first["subscribed_topic_names"] == ["t1"]
    assert first["server_assignor"] == "uniform"
    assert first["topic_partitions"] == []
    steady = fields.request(member_epoch=3, subscription=["t1"], owned=[], full=False,
                            rack_id="rack-a", **common)
    assert steady["rack_id"] is None
    assert (steady["rebalance_timeout_ms"], steady["subscribed_topic_names"],
            steady["server_assignor"], steady["topic_partitions"]) == (-1, None, None, None)
    ack = fields.request(member_epoch=3, subscription=["t1"], owned=[("t1", 2), ("t1", 0)],
                         full=False, **common)
    assert ack["topic_partitions"] == [{"topic_id": T1, "partitions": [0, 2]}]
    assert ack["subscribed_topic_names"] is None
    fields.reset()      # after a failed request everything goes again
    again = fields.request(member_epoch=3, subscription=["t1"], owned=[("t1", 0), ("t1", 2)],
                           full=False, **common)
    assert again["subscribed_topic_names"] == ["t1"] and again["topic_partitions"]
    for version in (0, 1):
        fit_request(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, again)


# ---- the member ----

SETTINGS = GroupSettings(group_id="g", session_timeout_ms=45000, rebalance_timeout_ms=60000,
                         heartbeat_interval_ms=3000, retry_backoff_ms=100)
COORDINATOR = {"error_code": 0, "node_id": 1, "host": "localhost", "port": 9092}


def metadata(*topics: tuple[str, uuid.UUID]) -> dict[str, Any]:
    return {"brokers": [{"node_id": 1, "host": "localhost", "port": 9092}],
            "topics": [{"name": n, "topic_id": tid, "error_code": 0, "partitions": []}
                       for n, tid in topics]}


def answer(epoch: int, assignment: dict[uuid.UUID, list[int]] | None = None,
           error: ErrorCode = ErrorCode.NONE, interval: int = 2000) -> dict[str, Any]:
    return {"error_code": int(error), "error_message": None, "member_id": None,
            "member_epoch": epoch, "heartbeat_interval_ms": interval,
            "assignment": None if assignment is None else {"topic_partitions": [
                {"topic_id": tid, "partitions": ps} for tid, ps in assignment.items()]}}


def step(member: ConsumerGroupMember, now: float) -> Send | Wait:
    return member.next_action(now)


def joined(assignment: dict[uuid.UUID, list[int]] | None = None,
           instance_id: str | None = None) -> ConsumerGroupMember:
    """A member past FindCoordinator and its first heartbeat (epoch 5)."""
    settings = SETTINGS if instance_id is None else GroupSettings(
        **{**SETTINGS.__dict__, "group_instance_id": instance_id})
    member = ConsumerGroupMember(settings, "range")
    member.subscribe(["t1", "t2"])
    member.on_poll(0)
    find = step(member, 0)
    assert isinstance(find, Send) and find.api_key == ApiKey.FIND_COORDINATOR
    member.handle_response(ApiKey.FIND_COORDINATOR, COORDINATOR, 0)
    join = step(member, 0)
    assert isinstance(join, Send) and join.api_key == ApiKey.CONSUMER_GROUP_HEARTBEAT
    body = join.body
    assert body["member_epoch"] == 0 and body["member_id"] == member.member_id
    assert body["subscribed_topic_names"] == ["t1", "t2"]
    assert body["rebalance_timeout_ms"] == 60000 and body["server_assignor"] == "range"
    assert body["instance_id"] == instance_id and body["topic_partitions"] == []
    member.handle_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(5, assignment), 0)
    return member


def take(member: ConsumerGroupMember) -> list[tuple[str, int]]:
    """What the consumer's poll does: revoke, then take the assignment; returns what
    was added."""
    revoking = member.partitions_to_revoke()
    if revoking is not None:
        member.revoked(revoking)
    added = list(member.pending_added)
    assert member.take_assignment() is not None
    return added


def test_member_resolves_ids_takes_the_assignment_and_acknowledges_at_once() -> None:
    member = joined({T1: [0, 1]})
    assert member.state == ConsumerMemberState.STABLE and member.generation_id == 5
    lookup = step(member, 10)
    assert isinstance(lookup, Send) and lookup.api_key == ApiKey.METADATA
    assert not lookup.to_coordinator
    assert member.pending_assignment is None        # the names are not known yet
    member.handle_response(ApiKey.METADATA, metadata(("t1", T1), ("t2", T2)), 10)
    assert member.pending_assignment == [("t1", 0), ("t1", 1)]
    assert take(member) == [("t1", 0), ("t1", 1)]
    ack = step(member, 20)                          # before the 2 s interval: an ack
    assert isinstance(ack, Send) and ack.api_key == ApiKey.CONSUMER_GROUP_HEARTBEAT
    assert ack.body["member_epoch"] == 5
    assert ack.body["topic_partitions"] == [{"topic_id": T1, "partitions": [0, 1]}]
    assert ack.body["subscribed_topic_names"] is None    # unchanged since the join
    member.handle_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(5), 20)
    assert step(member, 30) == Wait(2020)           # the interval the coordinator gave


def test_member_revokes_before_it_assigns() -> None:
    member = joined()
    member.handle_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(5), 0)
    member.handle_response(ApiKey.METADATA, metadata(("t1", T1), ("t2", T2)), 0)
    member.handle_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(6, {T1: [0, 1]}), 0)
    take(member)
    member.handle_response(ApiKey.CONSUMER_GROUP_HEARTBEAT,
                           answer(7, {T1: [1], T2: [0]}), 5000)
    assert member.partitions_to_revoke() == [("t1", 0)]
    assert member.pending_assignment is None        # nothing new before the revocation
    member.revoked([("t1", 0)])
    assert member.owned == [("t1", 1)]
    assert member.pending_added == [("t2", 0)]
    take(member)
    assert member.owned == [("t1", 1), ("t2", 0)]


def test_fenced_member_loses_its_partitions_then_joins_with_epoch_zero() -> None:
    member = joined()
    member.handle_response(ApiKey.METADATA, metadata(("t1", T1)), 0)
    member.handle_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(6, {T1: [0]}), 0)
    take(member)
    member.handle_response(ApiKey.CONSUMER_GROUP_HEARTBEAT,
                           answer(6, error=ErrorCode.FENCED_MEMBER_EPOCH), 100)
    assert member.partitions_lost and member.partitions_to_revoke() == [("t1", 0)]
    assert step(member, 100) == Wait(None)          # released in poll first
    member.revoked()
    rejoin = step(member, 100)
    assert isinstance(rejoin, Send) and rejoin.body["member_epoch"] == 0
    assert rejoin.body["subscribed_topic_names"] == ["t1", "t2"]
    assert rejoin.body["topic_partitions"] == []


@pytest.mark.parametrize("instance_id, epoch", [(None, -1), ("static-1", -2)])
def test_leaving_sends_the_leave_epoch(instance_id: str | None, epoch: int) -> None:
    member = joined(instance_id=instance_id)
    body = member.unsubscribe()
    assert body is not None and body["member_epoch"] == epoch
    assert body["instance_id"] == instance_id and body["member_id"] == member.member_id
    assert member.leave_api_key == ApiKey.CONSUMER_GROUP_HEARTBEAT


def test_member_leaves_after_max_poll_interval_and_rejoins_at_the_next_poll() -> None:
    member = joined()
    member.handle_response(ApiKey.METADATA, metadata(("t1", T1)), 0)
    member.handle_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(6, {T1: [0]}), 0)
    take(member)
    leave = step(member, 60001)
    assert isinstance(leave, Send) and leave.body["member_epoch"] == -1
    member.handle_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(-1), 60001)
    assert member.partitions_lost
    member.on_poll(70000)
    member.revoked()
    member.on_poll(70001)
    rejoin = step(member, 70001)
    assert isinstance(rejoin, Send) and rejoin.body["member_epoch"] == 0


def test_unsupported_broker_is_a_fatal_error_naming_group_protocol() -> None:
    member = joined()
    member.handle_response(ApiKey.CONSUMER_GROUP_HEARTBEAT,
                           answer(0, error=ErrorCode.UNSUPPORTED_VERSION), 0)
    assert isinstance(member.fatal_error, KafkaError)
    assert "group.protocol=classic" in str(member.fatal_error)


# ---- configuration ----


def test_group_protocol_configs() -> None:
    config = ConsumerConfig.from_mapping({"bootstrap.servers": "h:1", "group.protocol":
                                          "CONSUMER", "group.remote.assignor": "range"})
    assert (config.group_protocol, config.group_remote_assignor) == ("consumer", "range")
    assert ConsumerConfig.from_mapping({"bootstrap.servers": "h:1"}).group_protocol == "classic"


@pytest.mark.parametrize("key, value", [("session.timeout.ms", 10000),
                                        ("heartbeat.interval.ms", 1000),
                                        ("partition.assignment.strategy", "range")])
def test_classic_only_keys_are_rejected_with_the_consumer_protocol(key: str, value: Any
                                                                    ) -> None:
    with pytest.raises(ConfigError, match=f"{key} cannot be set when group.protocol=consumer"):
        ConsumerConfig.from_mapping({"bootstrap.servers": "h:1", "group.protocol": "consumer",
                                     key: value})


def test_remote_assignor_needs_the_consumer_protocol() -> None:
    with pytest.raises(ConfigError, match="group.remote.assignor"):
        ConsumerConfig.from_mapping({"bootstrap.servers": "h:1",
                                     "group.remote.assignor": "uniform"})


def test_a_broker_without_the_api_is_a_fatal_error() -> None:
    member = joined()
    member.handle_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(5), 0)
    heartbeat = step(member, 5000)
    assert isinstance(heartbeat, Send)
    member.handle_failure(heartbeat.api_key, 5000, KafkaError(
        ErrorCode.UNSUPPORTED_VERSION, "ConsumerGroupHeartbeat is not supported"))
    assert member.fatal_error is not None and member.fatal_error.code == \
        ErrorCode.UNSUPPORTED_VERSION
    assert step(member, 6000) == Wait(None)


def test_pattern_subscription_sends_the_regex_and_looks_up_every_topic() -> None:
    member = ConsumerGroupMember(SETTINGS)
    member.subscribe_pattern("orders-.*")
    member.handle_response(ApiKey.FIND_COORDINATOR, COORDINATOR, 0)
    join = step(member, 0)
    assert isinstance(join, Send)
    assert join.body["subscribed_topic_regex"] == "orders-.*"
    assert join.body["subscribed_topic_names"] is None
    fit_request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, join.body)
    member.handle_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(1, {T1: [0]}), 0)
    lookup = step(member, 0)
    assert isinstance(lookup, Send) and lookup.body["topics"] is None
    member.handle_response(ApiKey.METADATA, metadata(("orders-1", T1)), 0)
    assert member.pending_assignment == [("orders-1", 0)]
    steady = step(member, 3000)
    assert isinstance(steady, Send) and steady.body["subscribed_topic_regex"] is None


# ---- commits under the member epoch ----


class ScriptedCoordinator(GroupClient):
    """A GroupClient whose coordinator answers from a script, recording the bodies."""

    def __init__(self, member: ConsumerGroupMember, codes: list[ErrorCode],
                 on_answer: Any = None) -> None:
        super().__init__(member, None, lambda: [], 1)  # type: ignore[arg-type]
        self.codes, self.bodies, self.on_answer = codes, [], on_answer

    async def _coordinator_call(self, api_key: ApiKey, body: dict[str, Any],
                                deadline: float) -> dict[str, Any] | None:
        self.bodies.append(body)
        code = self.codes.pop(0)
        if self.on_answer is not None:
            self.on_answer()
        return {"topics": [{"name": "t1", "partitions": [
            {"partition_index": 0, "error_code": int(code)}]}]}


def test_a_stale_commit_goes_again_with_the_epoch_the_member_learnt() -> None:
    member = joined()

    def heartbeat_answered() -> None:
        member.member_epoch = 6
    client = ScriptedCoordinator(member, [ErrorCode.STALE_MEMBER_EPOCH, ErrorCode.NONE],
                                 heartbeat_answered)
    trio.run(client.commit, {("t1", 0): 10}, 5, member.member_id, 5.0)
    assert [b["generation_id_or_member_epoch"] for b in client.bodies] == [5, 6]
    assert {b["member_id"] for b in client.bodies} == {member.member_id}


def test_a_fenced_commit_fails_and_fences_the_member() -> None:
    member = joined()
    client = ScriptedCoordinator(member, [ErrorCode.FENCED_MEMBER_EPOCH])
    with pytest.raises(CommitFailedError):
        trio.run(client.commit, {("t1", 0): 10}, 5, member.member_id, 5.0)
    assert member.member_epoch == 0 and member.state == ConsumerMemberState.JOINING


def test_an_unnamed_topic_id_is_looked_up_again_after_the_backoff() -> None:
    member = joined({T1: [0], T2: [0]})
    lookup = step(member, 10)
    assert isinstance(lookup, Send) and lookup.api_key == ApiKey.METADATA
    member.handle_response(ApiKey.METADATA, metadata(("t1", T1)), 10)   # t2 not there yet
    assert member.pending_assignment == [("t1", 0)]      # the named part goes ahead
    take(member)
    ack = step(member, 10)
    assert isinstance(ack, Send) and ack.api_key == ApiKey.CONSUMER_GROUP_HEARTBEAT
    member.handle_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(5), 10)
    assert step(member, 50) == Wait(110)                 # not at once: the backoff
    again = step(member, 110)
    assert isinstance(again, Send) and again.api_key == ApiKey.METADATA
    member.handle_response(ApiKey.METADATA, metadata(("t1", T1), ("t2", T2)), 120)
    assert take(member) == [("t2", 0)]
    assert member.owned == [("t1", 0), ("t2", 0)]


def test_an_assignment_taken_while_a_heartbeat_is_out_is_acknowledged_at_its_answer() -> None:
    member = joined()
    member.handle_response(ApiKey.METADATA, metadata(("t1", T1)), 0)
    member.handle_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(6, {T1: [0]}), 10)
    beat = step(member, 2010)       # the regular heartbeat, out before the application polls
    assert isinstance(beat, Send) and beat.body["topic_partitions"] is None
    take(member)
    member.handle_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, answer(6), 2030)
    ack = step(member, 2030)        # not an interval later
    assert isinstance(ack, Send)
    assert ack.body["topic_partitions"] == [{"topic_id": T1, "partitions": [0]}]


def test_a_pattern_needs_the_consumer_protocol() -> None:
    classic = GroupMembership(SETTINGS, make_assignors(("range",)))
    with pytest.raises(ValueError, match="group.protocol=consumer"):
        classic.subscribe(re.compile("orders-.*"))
    member = ConsumerGroupMember(SETTINGS)
    member.subscribe(re.compile("orders-.*"))
    assert member.subscription_regex == "orders-.*"
