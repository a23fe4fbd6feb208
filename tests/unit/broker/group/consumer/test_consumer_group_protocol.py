"""Consumer-type groups (KIP-848) as a pure state machine: epochs, assignors, revocation
before reassignment, timeouts, static members and the errors Kafka answers."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from broker.config import ConfigError
from broker.group.consumer.assignors import range_assignor, uniform
from broker.group.consumer.manager import ConsumerGroupManager
from broker.group.consumer.persistence import group_state
from broker.group.consumer.settings import ConsumerGroupSettings
from broker.group.engine import GroupEngine, PartitionReplay
from broker.group.model import GroupCoordinatorSettings
from broker.group.records import (ConsumerGroupKey, ConsumerGroupValue, OffsetValue,
                                  build_batch, iter_log)
from clients.protocol import ApiKey, ErrorCode, as_message
from clients.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatResponseData,
)
from tests.unit.broker.apis.harness import running_broker
from tests.unit.broker.config.test_server_config import config

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
TOPICS = {"a": (T1, 6), "b": (T2, 3)}
SESSION_MS = 45_000


def manager(**settings: Any) -> ConsumerGroupManager:
    return ConsumerGroupManager(ConsumerGroupSettings(**settings))


def beat(m: ConsumerGroupManager, member: str, epoch: int, *, owned: Any = None,
         now: int = 0, topics: Any = None, version: int = 1, **fields: Any
         ) -> ConsumerGroupHeartbeatResponseData:
    request = {"group_id": "g", "member_id": member, "member_epoch": epoch,
               "instance_id": None, "rack_id": None, "rebalance_timeout_ms": -1,
               "subscribed_topic_names": None, "subscribed_topic_regex": None,
               "server_assignor": None, "topic_partitions": owned}
    if epoch == 0:
        request.update(rebalance_timeout_ms=10_000, subscribed_topic_names=["a"],
                       topic_partitions=[])
    request.update(fields)
    return m.heartbeat(as_message(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, request), version,
                       client_id="c", client_host="/127.0.0.1",
                       topics=TOPICS if topics is None else topics, classic_has_members=False,
                       now_ms=now)


def parts(body: ConsumerGroupHeartbeatResponseData) -> dict[uuid.UUID, list[int]]:
    return {t.topic_id: t.partitions for t in body.assignment.topic_partitions}


def owned(assignment: dict[uuid.UUID, list[int]]) -> list[dict[str, Any]]:
    return [{"topic_id": t, "partitions": p} for t, p in assignment.items()]


def test_first_member_gets_everything_at_epoch_one() -> None:
    m = manager()
    body = beat(m, "m1", 0)
    assert body.error_code == 0
    assert (body.member_id, body.member_epoch) == ("m1", 1)
    assert parts(body) == {T1: [0, 1, 2, 3, 4, 5]}
    assert body.heartbeat_interval_ms == 5000
    group = m.groups["g"]
    assert (group.group_epoch, group.assignment_epoch, group.state().value) == (1, 1, "Stable")


def test_a_partition_moves_only_after_its_owner_revoked_it() -> None:
    m = manager()
    first = parts(beat(m, "m1", 0))
    second = beat(m, "m2", 0)
    # m2 is at the new epoch but gets nothing m1 still holds.
    assert second.member_epoch == 2 and parts(second) == {}
    assert m.groups["g"].state().value == "Reconciling"
    # m1 is asked to revoke half, keeping its epoch until it has.
    asked = beat(m, "m1", 1, owned=owned(first))
    kept = parts(asked)
    assert asked.member_epoch == 1 and len(kept[T1]) == 3
    still = beat(m, "m2", 2, owned=[])
    assert still.assignment is None
    # Once m1 reports only what it keeps, it moves to epoch 2 and m2 gets the rest.
    assert beat(m, "m1", 1, owned=owned(kept)).member_epoch == 2
    given = beat(m, "m2", 2, owned=[])
    assert sorted(parts(given)[T1]) == sorted(set(range(6)) - set(kept[T1]))
    assert m.groups["g"].state().value == "Stable"


def test_leave_and_session_timeout_hand_partitions_over() -> None:
    m = manager()
    beat(m, "m1", 0)
    beat(m, "m2", 0)
    left = beat(m, "m1", -1)
    assert (left.error_code, left.member_epoch) == (0, -1)
    taken = beat(m, "m2", 2, owned=[])
    assert parts(taken) == {T1: [0, 1, 2, 3, 4, 5]}
    beat(m, "m3", 0, now=1000)
    # m2 never heartbeats again: fenced once its session is over, m3 gets everything.
    late = beat(m, "m3", m.groups["g"].members["m3"].member_epoch, owned=[],
                now=SESSION_MS + 500)
    assert set(m.groups["g"].members) == {"m3"}
    assert parts(late) == {T1: [0, 1, 2, 3, 4, 5]}


def test_member_that_does_not_revoke_in_time_is_fenced() -> None:
    m = manager()
    beat(m, "m1", 0)
    beat(m, "m2", 0)
    beat(m, "m1", 1, owned=owned({T1: list(range(6))}))  # asked to revoke, rebalance 10 s
    beat(m, "m2", 2, owned=[], now=10_000)
    assert "m1" not in m.groups["g"].members


def test_epoch_errors() -> None:
    m = manager()
    assert beat(m, "m1", 3).error_code == ErrorCode.GROUP_ID_NOT_FOUND
    beat(m, "m1", 0)
    assert beat(m, "m1", 5, owned=[]).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert beat(m, "nobody", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert beat(m, "nobody", -1).error_code == ErrorCode.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize(("fields", "code"), [
    ({"member_id": ""}, ErrorCode.INVALID_REQUEST),
    ({"rebalance_timeout_ms": -1}, ErrorCode.INVALID_REQUEST),
    ({"topic_partitions": None}, ErrorCode.INVALID_REQUEST),
    ({"subscribed_topic_names": []}, ErrorCode.INVALID_REQUEST),
    ({"server_assignor": "sticky"}, ErrorCode.UNSUPPORTED_ASSIGNOR),
    ({"subscribed_topic_regex": "a("}, ErrorCode.INVALID_REGULAR_EXPRESSION),
    ({"group_id": ""}, ErrorCode.INVALID_REQUEST),
])
def test_invalid_joins(fields: dict[str, Any], code: int) -> None:
    assert beat(manager(), "m1", 0, **fields).error_code == code


def test_v0_join_without_member_id_gets_one() -> None:
    body = beat(manager(), "", 0, version=0)
    assert body.error_code == 0 and body.member_id


def test_regex_subscription_and_new_topics_bump_the_group_epoch() -> None:
    m = manager()
    body = beat(m, "m1", 0, subscribed_topic_names=None, subscribed_topic_regex="[ab]")
    assert parts(body) == {T1: list(range(6)), T2: [0, 1, 2]}
    more = {**TOPICS, "b": (T2, 4), "__consumer_offsets": (uuid.UUID(int=9), 3)}
    grown = beat(m, "m1", 1, owned=[], topics=more)
    assert grown.member_epoch == 2 and parts(grown)[T2] == [0, 1, 2, 3]


def test_static_member_leaves_for_a_while_and_returns_to_its_partitions() -> None:
    m = manager()
    beat(m, "s1", 0, instance_id="i1")
    beat(m, "m2", 0)
    beat(m, "s1", 1, owned=owned({T1: list(range(6))}), instance_id="i1")
    kept = m.groups["g"].members["s1"].assigned
    assert beat(m, "other", 0, instance_id="i1").error_code == ErrorCode.UNRELEASED_INSTANCE_ID
    away = beat(m, "s1", -2, instance_id="i1")
    assert (away.error_code, away.member_epoch) == (0, -2)
    back = beat(m, "s1-new", 0, instance_id="i1")
    assert back.error_code == 0 and "s1" not in m.groups["g"].members
    assert {t: frozenset(p) for t, p in parts(back).items()} == kept
    assert beat(m, "s1", 1, instance_id="i1").error_code == ErrorCode.FENCED_INSTANCE_ID


def test_classic_group_with_members_is_not_a_consumer_group() -> None:
    m = manager()
    request = {"group_id": "g", "member_id": "m1", "member_epoch": 0, "instance_id": None,
               "rack_id": None, "rebalance_timeout_ms": 1000, "subscribed_topic_names": ["a"],
               "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []}
    body = m.heartbeat(as_message(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, request), 1,
                       client_id="c", client_host="h", topics=TOPICS,
                       classic_has_members=True, now_ms=0)
    assert body.error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_offset_commit_and_fetch_check_the_member_epoch() -> None:
    m = manager()
    beat(m, "m1", 0)
    assert m.validate_commit("g", "m1", 1, 9) == ErrorCode.NONE
    assert m.validate_commit("g", "m1", 0, 9) == ErrorCode.STALE_MEMBER_EPOCH
    assert m.validate_commit("g", "m1", 1, 8) == ErrorCode.UNSUPPORTED_VERSION
    assert m.validate_commit("g", "x", 1, 9) == ErrorCode.UNKNOWN_MEMBER_ID
    assert m.validate_commit("g", "", -1, 9) == ErrorCode.UNKNOWN_MEMBER_ID
    assert m.validate_fetch("g", None, -1) == ErrorCode.NONE
    assert m.validate_fetch("g", "m1", 2) == ErrorCode.STALE_MEMBER_EPOCH
    beat(m, "m1", -1)
    assert m.validate_commit("g", "", -1, 9) == ErrorCode.NONE


def test_group_full() -> None:
    m = manager(max_size=1)
    beat(m, "m1", 0)
    assert beat(m, "m2", 0).error_code == ErrorCode.GROUP_MAX_SIZE_REACHED


def test_uniform_is_balanced_and_sticky() -> None:
    subs = {m: frozenset({"a", "b"}) for m in ("x", "y", "z")}
    first = uniform(subs, TOPICS, {})
    assert sorted(sum(len(p) for p in a.values()) for a in first.values()) == [3, 3, 3]
    second = uniform({**subs, "w": frozenset({"a", "b"})}, TOPICS, first)
    sizes = sorted(sum(len(p) for p in a.values()) for a in second.values())
    assert sizes == [2, 2, 2, 3]
    kept = sum(len(first[m][t] & second[m].get(t, frozenset())) for m in first for t in first[m])
    assert kept == 7  # only the partitions the new member needs moved


def test_uniform_respects_subscriptions() -> None:
    result = uniform({"x": frozenset({"a"}), "y": frozenset({"a", "b"})}, TOPICS, {})
    assert T2 not in result["x"] and result["y"][T2] == frozenset({0, 1, 2})
    assert len(result["x"][T1]) + len(result["y"].get(T1, ())) == 6


def test_range_gives_contiguous_ranges_per_topic() -> None:
    result = range_assignor({"x": frozenset({"a", "b"}), "y": frozenset({"a", "b"})}, TOPICS, {})
    assert result["x"] == {T1: frozenset({0, 1, 2}), T2: frozenset({0, 1})}
    assert result["y"] == {T1: frozenset({3, 4, 5}), T2: frozenset({2})}


def test_settings_from_the_config_keys() -> None:
    defaults = ConsumerGroupSettings.from_config(config())
    assert (defaults.enabled, defaults.assignors) == (True, ("uniform", "range"))
    assert (defaults.session_timeout_ms, defaults.heartbeat_interval_ms) == (45_000, 5_000)
    chosen = ConsumerGroupSettings.from_config(config(**{
        "group.coordinator.rebalance.protocols": "classic",
        "group.consumer.assignors":
            "org.apache.kafka.coordinator.group.assignor.RangeAssignor,uniform"}))
    assert (chosen.enabled, chosen.assignors) == (False, ("range", "uniform"))


@pytest.mark.parametrize(("key", "value"), [
    ("group.coordinator.rebalance.protocols", "consumer"),
    ("group.coordinator.rebalance.protocols", "classic,share"),
    ("group.consumer.assignors", "uniform,sticky"),
    ("group.consumer.assignors", ""),
    ("group.consumer.heartbeat.interval.ms", "45000"),
])
def test_bad_settings_stop_start_up_naming_the_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError) as failure:
        config(**{key: value})
    assert failure.value.key == key


async def test_heartbeat_without_the_consumer_protocol_is_unsupported(tmp_path) -> None:
    extra = {"group.coordinator.rebalance.protocols": "classic"}
    async with running_broker(tmp_path, extra=extra) as broker:
        conn = await broker.connect()
        body = await conn.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, {
            "group_id": "g", "member_id": "m", "member_epoch": 0, "rebalance_timeout_ms": 1000,
            "subscribed_topic_names": ["t"], "topic_partitions": []}, 1)
        assert body["error_code"] == ErrorCode.UNSUPPORTED_VERSION
        await conn.aclose()


def test_a_stored_group_is_adopted_with_fresh_sessions_after_a_load() -> None:
    m = manager()
    beat(m, "s1", 0, instance_id="i1", subscribed_topic_regex="b", subscribed_topic_names=None)
    beat(m, "m2", 0)
    beat(m, "s1", 1, owned=[], instance_id="i1")
    writes = m.pending_writes()
    assert [(g, s is not None) for g, _, s in writes] == [("g", True)]
    assert m.pending_writes() == []  # nothing changed since
    group_id, partition, state = writes[0]
    batch = bytearray(build_batch([(ConsumerGroupKey(group_id), ConsumerGroupValue(state))], 0))
    replay = PartitionReplay()
    replay.apply(iter_log(batch))
    engine = GroupEngine(GroupCoordinatorSettings())
    assert engine.install(partition, replay, 0) == 1
    fresh = manager()
    fresh.adopt(engine.loaded_consumer_groups, now_ms=100_000)
    assert engine.loaded_consumer_groups == {}
    loaded = fresh.groups["g"]
    assert group_state(loaded) == group_state(m.groups["g"])
    assert all(mb.session_deadline == 100_000 + SESSION_MS for mb in loaded.members.values())
    assert fresh.pending_writes() == []
    # The members carry on with the epochs they had.
    again = beat(fresh, "m2", m.groups["g"].members["m2"].member_epoch, owned=[], now=100_000)
    assert again.error_code == 0
    fresh.delete("g")  # not empty: refused
    beat(fresh, "m2", -1, now=100_000)
    beat(fresh, "s1", -1, instance_id="i1", now=100_000)
    assert fresh.delete("g") == 0
    assert [(g, s) for g, _, s in fresh.pending_writes()] == [("g", None)]


def test_offsets_of_a_consumer_group_with_members_do_not_expire() -> None:
    m = manager()
    beat(m, "m1", 0)
    engine = GroupEngine(GroupCoordinatorSettings(offsets_retention_ms=1000))
    engine.active_consumer_groups = m.active
    for group_id in ("g", "other"):
        engine.commit(as_message(ApiKey.OFFSET_COMMIT, 9, {
            "group_id": group_id, "topics": [{"name": "a", "partitions": [
                {"partition_index": 0, "committed_offset": 5}]}]}), now_ms=0).write.then(0)
    assert isinstance(engine.groups["g"].offsets[("a", 0)], OffsetValue)
    engine.expire_offsets(now_ms=10_000)
    assert "other" not in engine.groups and ("a", 0) in engine.groups["g"].offsets
    beat(m, "m1", -1)
    engine.expire_offsets(now_ms=10_000)
    assert "g" not in engine.groups
