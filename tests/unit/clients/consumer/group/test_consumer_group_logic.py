"""Consumer-group logic without I/O: the consumer protocol bytes (checked against
kafka-python's encoder), Kafka's range and roundrobin assignors, and the member state
machine driven by hand-written coordinator answers."""

from __future__ import annotations

from typing import Any

import pytest

from clients.consumer.group import (
    Assignment,
    GroupMembership,
    GroupSettings,
    ClassicMemberState,
    MemberSubscription,
    RangeAssignor,
    RoundRobinAssignor,
    Subscription,
    assignor_names,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    make_assignors,
)
from clients.consumer.group.membership import Send, Wait
from clients.consumer.group.offsets import parse_offset_fetch
from clients.protocol import ApiKey, ErrorCode, ProtocolError
from clients.protocol.fit import fit_request

# ---- protocol ----


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_round_trips_at_every_version(version: int) -> None:
    sub = Subscription(("a", "b"), b"ud" if version % 2 else None,
                       (("a", 0), ("a", 2), ("b", 1)) if version >= 1 else (),
                       7 if version >= 2 else -1, "rack-1" if version >= 3 else None, version)
    assert decode_subscription(encode_subscription(sub)) == sub


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_bytes_match_kafka_python(version: int) -> None:
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KpSub

    theirs = KpSub(version=version, topics=["t0", "t1"], user_data=b"x",
                   owned_partitions=[KpSub.TopicPartition(topic="t0", partitions=[0, 2])],
                   generation_id=3, rack_id="r").encode()
    # Fields newer than ``version`` are not written, so they decode as their defaults.
    ours = Subscription(("t0", "t1"), b"x", (("t0", 0), ("t0", 2)) if version >= 1 else (),
                        3 if version >= 2 else -1, "r" if version >= 3 else None, version)
    assert encode_subscription(ours) == theirs
    assert decode_subscription(theirs) == ours


def test_decodes_kafka_python_range_metadata_and_assignment() -> None:
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as KpAssignment

    metadata = RangePartitionAssignor.metadata(["t1", "t0"]).encode()
    assert decode_subscription(metadata) == Subscription(("t1", "t0"), b"", version=0)
    theirs = KpAssignment(version=0, assigned_partitions=[
        KpAssignment.TopicPartition(topic="t", partitions=[0, 1])], user_data=b"").encode()
    assert decode_assignment(theirs) == Assignment((("t", 0), ("t", 1)), b"", 0)
    assert encode_assignment(Assignment((("t", 0), ("t", 1)), b"", 0)) == theirs


def test_newer_versions_decode_as_the_newest_known_and_junk_is_refused() -> None:
    v3 = encode_subscription(Subscription(("a",), None, (("a", 1),), 4, None, 3))
    v9 = b"\x00\x09" + v3[2:] + b"future fields"
    assert decode_subscription(v9).topics == ("a",)
    assert decode_subscription(v9).owned_partitions == (("a", 1),)
    assert decode_assignment(b"") == Assignment()
    with pytest.raises(ProtocolError):
        decode_subscription(v3[:7])
    with pytest.raises(ProtocolError):
        decode_assignment(b"\x00\x00\x7f\xff\xff\xff")


# ---- assignors ----

def members(*specs: tuple[str, tuple[str, ...]]) -> list[MemberSubscription]:
    return [MemberSubscription(m, topics) for m, topics in specs]


def test_range_matches_kafkas_documented_example() -> None:
    result = RangeAssignor().assign({"t0": 3, "t1": 3},
                                    members(("C1", ("t0", "t1")), ("C0", ("t0", "t1"))))
    assert result == {"C0": [("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)],
                      "C1": [("t0", 2), ("t1", 2)]}


def test_roundrobin_matches_kafkas_documented_examples() -> None:
    same = RoundRobinAssignor().assign({"t0": 3, "t1": 3},
                                       members(("C0", ("t0", "t1")), ("C1", ("t0", "t1"))))
    assert same == {"C0": [("t0", 0), ("t0", 2), ("t1", 1)],
                    "C1": [("t0", 1), ("t1", 0), ("t1", 2)]}
    mixed = RoundRobinAssignor().assign(
        {"t0": 1, "t1": 2, "t2": 3},
        members(("C0", ("t0",)), ("C1", ("t0", "t1")), ("C2", ("t0", "t1", "t2"))))
    assert mixed == {"C0": [("t0", 0)], "C1": [("t1", 0)],
                     "C2": [("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)]}


def test_static_members_come_first_and_unknown_topics_are_skipped() -> None:
    group = [MemberSubscription("a-dynamic", ("t",)),
             MemberSubscription("z-static", ("t", "gone"), group_instance_id="i1")]
    assert RangeAssignor().assign({"t": 3}, group) == {
        "z-static": [("t", 0), ("t", 1)], "a-dynamic": [("t", 2)]}


def test_strategy_names_follow_kafka() -> None:
    assert assignor_names("range") == ["range"]
    assert assignor_names("roundrobin, org.apache.kafka.clients.consumer.RangeAssignor") == [
        "roundrobin", "range"]
    assert assignor_names("org.apache.kafka.clients.consumer.CooperativeStickyAssignor,"
                          "sticky") == ["cooperative-sticky", "sticky"]
    with pytest.raises(ValueError, match="uniform"):
        assignor_names("uniform")


# ---- offsets bodies ----

def test_bodies_fit_the_negotiated_version() -> None:
    body = {"group_id": "g", "topics": [], "groups": [{"group_id": "g"}],
            "require_stable": True}
    assert set(fit_request(ApiKey.OFFSET_FETCH, 7, body)) == {
        "group_id", "topics", "require_stable"}
    assert set(fit_request(ApiKey.OFFSET_FETCH, 8, body)) == {"groups", "require_stable"}
    v8 = {"groups": [{"group_id": "g", "error_code": 0, "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": 5, "error_code": 0},
        {"partition_index": 1, "committed_offset": -1, "error_code": 0}]}]}]}
    assert parse_offset_fetch(v8).offsets == {("t", 0): 5, ("t", 1): None}


# ---- membership ----

SETTINGS = GroupSettings("g", session_timeout_ms=10000, rebalance_timeout_ms=60000,
                         heartbeat_interval_ms=1000, retry_backoff_ms=100)


def expect_send(m: GroupMembership, now: float, api_key: ApiKey) -> Send:
    action = m.next_action(now)
    assert isinstance(action, Send) and action.api_key == api_key, action
    return action


def join_as_leader(m: GroupMembership, now: float = 0) -> dict[str, Any]:
    """Drive ``m`` from subscribe to SyncGroup as leader of itself and member "other"."""
    expect_send(m, now, ApiKey.FIND_COORDINATOR)
    m.handle_response(ApiKey.FIND_COORDINATOR,
                      {"error_code": 0, "node_id": 1, "host": "h", "port": 9}, now)
    join = expect_send(m, now, ApiKey.JOIN_GROUP)
    assert join.body["member_id"] == "" and join.to_coordinator
    assert [p["name"] for p in join.body["protocols"]] == ["range", "roundrobin"]
    m.handle_response(ApiKey.JOIN_GROUP, {"error_code": ErrorCode.MEMBER_ID_REQUIRED,
                                          "member_id": "me", "generation_id": -1,
                                          "protocol_name": None, "leader": "",
                                          "members": []}, now)
    join = expect_send(m, now, ApiKey.JOIN_GROUP)
    assert join.body["member_id"] == "me"
    theirs = encode_subscription(Subscription(("t",), version=0))
    m.handle_response(ApiKey.JOIN_GROUP, {
        "error_code": 0, "member_id": "me", "generation_id": 5, "protocol_name": "range",
        "leader": "me", "members": [
            {"member_id": "me", "metadata": join.body["protocols"][0]["metadata"]},
            {"member_id": "other", "metadata": theirs}]}, now)
    meta = expect_send(m, now, ApiKey.METADATA)
    assert meta.body["topics"] == [{"name": "t"}] and not meta.to_coordinator
    m.handle_response(ApiKey.METADATA, {"brokers": [], "topics": [{
        "name": "t", "error_code": 0, "partitions": [
            {"partition_index": p, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1],
             "error_code": 0} for p in range(3)]}]}, now)
    sync = expect_send(m, now, ApiKey.SYNC_GROUP)
    assert sync.body["generation_id"] == 5
    return {a["member_id"]: decode_assignment(a["assignment"]).partitions
            for a in sync.body["assignments"]}


def stable_member(now: float = 0) -> GroupMembership:
    m = GroupMembership(SETTINGS, make_assignors(["range", "roundrobin"]))
    m.subscribe(["t"])
    assignments = join_as_leader(m, now)
    assert assignments == {"me": (("t", 0), ("t", 1)), "other": (("t", 2),)}
    m.handle_response(ApiKey.SYNC_GROUP, {
        "error_code": 0, "assignment": encode_assignment(Assignment(assignments["me"]))}, now)
    assert m.state == ClassicMemberState.STABLE
    assert m.take_assignment() == [("t", 0), ("t", 1)] and m.take_assignment() is None
    return m


def test_join_as_leader_assigns_everyone_and_heartbeats_on_schedule() -> None:
    m = stable_member()
    assert m.next_action(500) == Wait(1000)
    hb = expect_send(m, 1000, ApiKey.HEARTBEAT)
    assert (hb.body["generation_id"], hb.body["member_id"]) == (5, "me")
    assert m.next_action(1000) == Wait(None)          # one request at a time
    m.handle_response(ApiKey.HEARTBEAT, {"error_code": 0}, 1010)
    assert m.next_action(1500) == Wait(2010)


def test_rebalance_waits_for_the_application_to_revoke_then_rejoins() -> None:
    m = stable_member()
    expect_send(m, 1000, ApiKey.HEARTBEAT)
    m.handle_response(ApiKey.HEARTBEAT, {"error_code": ErrorCode.REBALANCE_IN_PROGRESS}, 1000)
    assert m.partitions_to_revoke() == [("t", 0), ("t", 1)] and not m.partitions_lost
    assert m.active                                   # the revoke-time commit still counts
    expect_send(m, 2000, ApiKey.HEARTBEAT)            # still alive while waiting
    m.handle_response(ApiKey.HEARTBEAT, {"error_code": ErrorCode.REBALANCE_IN_PROGRESS}, 2000)
    m.revoked()
    join = expect_send(m, 2000, ApiKey.JOIN_GROUP)
    assert join.body["member_id"] == "me"             # the same member rejoins


@pytest.mark.parametrize("code", [ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION])
def test_stale_member_resets_and_loses_its_partitions(code: ErrorCode) -> None:
    m = stable_member()
    expect_send(m, 1000, ApiKey.HEARTBEAT)
    m.handle_response(ApiKey.HEARTBEAT, {"error_code": code}, 1000)
    assert (m.member_id, m.generation_id, m.state) == ("", -1, ClassicMemberState.UNJOINED)
    assert m.partitions_to_revoke() == [("t", 0), ("t", 1)] and m.partitions_lost
    assert m.next_action(1000) == Wait(None)
    m.revoked()
    assert expect_send(m, 1000, ApiKey.JOIN_GROUP).body["member_id"] == ""


@pytest.mark.parametrize("code", [ErrorCode.NOT_COORDINATOR,
                                  ErrorCode.COORDINATOR_NOT_AVAILABLE])
def test_lost_coordinator_is_found_again_and_heartbeats_resume(code: ErrorCode) -> None:
    m = stable_member()
    expect_send(m, 1000, ApiKey.HEARTBEAT)
    m.handle_response(ApiKey.HEARTBEAT, {"error_code": code}, 1000)
    expect_send(m, 1000, ApiKey.FIND_COORDINATOR)
    m.handle_response(ApiKey.FIND_COORDINATOR,
                      {"error_code": 0, "node_id": 2, "host": "h2", "port": 9}, 1000)
    assert m.coordinator is not None and m.coordinator.node_id == 2
    expect_send(m, 1000, ApiKey.HEARTBEAT)


def test_no_answer_at_all_means_finding_the_coordinator_after_a_backoff() -> None:
    m = stable_member()
    expect_send(m, 1000, ApiKey.HEARTBEAT)
    m.handle_failure(ApiKey.HEARTBEAT, 1000)
    assert m.coordinator is None and m.next_action(1050) == Wait(1100)
    expect_send(m, 1100, ApiKey.FIND_COORDINATOR)


def test_a_member_that_stops_polling_leaves_and_rejoins_at_its_next_poll() -> None:
    m = stable_member()
    m.on_poll(0)
    leave = expect_send(m, 60001, ApiKey.LEAVE_GROUP)
    assert leave.body["members"][0]["member_id"] == "me"
    m.handle_response(ApiKey.LEAVE_GROUP, {"error_code": 0}, 60001)
    assert m.next_action(60002) == Wait(None) and m.partitions_lost
    m.on_poll(70000)
    m.revoked()
    assert expect_send(m, 70000, ApiKey.JOIN_GROUP).body["member_id"] == ""


def test_follower_syncs_without_assignments_and_fatal_errors_stop() -> None:
    m = GroupMembership(SETTINGS, make_assignors(["range"]))
    m.subscribe(["t"])
    expect_send(m, 0, ApiKey.FIND_COORDINATOR)
    m.handle_response(ApiKey.FIND_COORDINATOR,
                      {"error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE, "node_id": -1,
                       "host": "", "port": -1}, 0)
    assert m.next_action(50) == Wait(100)
    expect_send(m, 100, ApiKey.FIND_COORDINATOR)
    m.handle_response(ApiKey.FIND_COORDINATOR,
                      {"error_code": 0, "node_id": 1, "host": "h", "port": 9}, 100)
    expect_send(m, 100, ApiKey.JOIN_GROUP)
    m.handle_response(ApiKey.JOIN_GROUP, {"error_code": 0, "member_id": "b",
                                          "generation_id": 1, "protocol_name": "range",
                                          "leader": "a", "members": []}, 100)
    assert expect_send(m, 100, ApiKey.SYNC_GROUP).body["assignments"] == []
    m.handle_response(ApiKey.SYNC_GROUP, {"error_code": ErrorCode.REBALANCE_IN_PROGRESS,
                                          "assignment": b""}, 100)
    join = expect_send(m, 100, ApiKey.JOIN_GROUP)
    assert join.body["member_id"] == "b"
    m.handle_response(ApiKey.JOIN_GROUP, {
        "error_code": ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "member_id": "",
        "generation_id": -1, "protocol_name": None, "leader": "", "members": []}, 100)
    assert m.fatal_error is not None and m.next_action(200) == Wait(None)


def test_unsubscribe_gives_the_leave_request_and_stops() -> None:
    m = stable_member()
    body = m.unsubscribe()
    assert body is not None and body["member_id"] == "me"
    assert m.next_action(5000) == Wait(None) and m.member_id == ""


def _syncing_follower(generation: int) -> GroupMembership:
    m = GroupMembership(SETTINGS, make_assignors(["range"]))
    m.subscribe(["t"])
    expect_send(m, 0, ApiKey.FIND_COORDINATOR)
    m.handle_response(ApiKey.FIND_COORDINATOR,
                      {"error_code": 0, "node_id": 1, "host": "h", "port": 9}, 0)
    expect_send(m, 0, ApiKey.JOIN_GROUP)
    m.handle_response(ApiKey.JOIN_GROUP, {"error_code": 0, "member_id": "b",
                                          "generation_id": generation,
                                          "protocol_name": "range", "leader": "a",
                                          "members": []}, 0)
    expect_send(m, 0, ApiKey.SYNC_GROUP)
    return m


def test_a_commit_error_from_an_older_generation_keeps_the_membership() -> None:
    m = _syncing_follower(6)
    m.group_error(ErrorCode.ILLEGAL_GENERATION, "OffsetCommit", 10, 5, "b")
    assert (m.state, m.member_id, m.generation_id) == (ClassicMemberState.SYNCING, "b", 6)
    m.handle_response(ApiKey.SYNC_GROUP, {
        "error_code": 0, "assignment": encode_assignment(Assignment((("t", 0),)))}, 20)
    assert m.active and m.take_assignment() == [("t", 0)]
    # The same error for the generation the member holds does reset it.
    m.group_error(ErrorCode.ILLEGAL_GENERATION, "OffsetCommit", 30, 6, "b")
    assert (m.state, m.member_id, m.generation_id) == (ClassicMemberState.UNJOINED, "", -1)


def test_a_sync_answer_for_a_join_the_member_gave_up_is_ignored() -> None:
    m = _syncing_follower(3)
    m.group_error(ErrorCode.UNKNOWN_MEMBER_ID, "OffsetCommit", 10, 3, "b")
    m.handle_response(ApiKey.SYNC_GROUP, {
        "error_code": 0, "assignment": encode_assignment(Assignment((("t", 0),)))}, 20)
    assert m.state == ClassicMemberState.UNJOINED and m.pending_assignment is None
    assert expect_send(m, 30, ApiKey.JOIN_GROUP).body["member_id"] == ""


def test_a_commit_rebalancing_error_during_sync_keeps_the_join() -> None:
    # A manual commit made while SyncGroup is out carries the new generation; the
    # coordinator answers REBALANCE_IN_PROGRESS (the group is completing its rebalance).
    # The member is in that rebalance already: its SyncGroup answer still counts.
    m = _syncing_follower(4)
    m.group_error(ErrorCode.REBALANCE_IN_PROGRESS, "OffsetCommit", 10, 4, "b")
    assert (m.state, m.member_id, m.generation_id) == (ClassicMemberState.SYNCING, "b", 4)
    assert not m.rejoin_needed
    m.handle_response(ApiKey.SYNC_GROUP, {
        "error_code": 0, "assignment": encode_assignment(Assignment((("t", 0),)))}, 20)
    assert m.state == ClassicMemberState.STABLE and m.take_assignment() == [("t", 0)]
    # Once stable, the same error does ask for a rejoin.
    m.group_error(ErrorCode.REBALANCE_IN_PROGRESS, "OffsetCommit", 30, 4, "b")
    assert m.state == ClassicMemberState.STABLE and m.rejoin_needed
