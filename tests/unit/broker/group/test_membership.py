"""The classic group protocol on the pure engine: states, transitions and error codes."""

from __future__ import annotations

from typing import Any

import pytest

from broker.group.model import Group, ClassicGroupState, IllegalStateTransition
from broker.group.records import GroupKey
from clients.protocol import ErrorCode
from clients.protocol.messages.join_group import JoinGroupResponseData
from tests.unit.broker.group.engine_helpers import (
    Log,
    heartbeat_request,
    join_all,
    join_request,
    new_engine,
    sync_request,
)

S = ClassicGroupState


def join(engine, request, now=0, require_known=False):  # type: ignore[no-untyped-def]
    return engine.join(request, client_id="c", client_host="/h",
                       require_known_member_id=require_known, now_ms=now)


def stable_group(engine, log, count=2, now=0):  # type: ignore[no-untyped-def]
    """A Stable group "g" of `count` members c-1.. (c-1 leads), generation 1."""
    ids = []
    for _ in range(count):
        outcome, _ = join(engine, join_request(), now, require_known=True)
        ids.append(outcome.body.member_id)
    replies = join_all(engine, log, ids, now)
    assert all(replies[(m, "join")].generation_id == 1 for m in ids)
    for member in ids[1:]:
        outcome, effects = engine.sync(sync_request("g", member, 1), now)
        assert outcome.parked == member
    outcome, effects = engine.sync(sync_request("g", ids[0], 1, {m: m.encode() for m in ids}), now)
    replies = log.settle(effects)
    assert {m: replies[(m, "sync")].assignment for m in ids} == {m: m.encode() for m in ids}
    assert engine.groups["g"].state is S.STABLE
    return ids


def test_first_join_without_member_id_gets_member_id_required_on_v4():
    engine = new_engine()
    outcome, effects = join(engine, join_request(), require_known=True)
    assert outcome.body.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert outcome.body.member_id == "c-1"
    assert engine.groups["g"].state is S.EMPTY and "c-1" in engine.groups["g"].pending_members


def test_join_before_v4_enters_directly_and_first_joiner_leads():
    engine, log = new_engine(initial_rebalance_delay_ms=0), Log()
    outcome, effects = join(engine, join_request())
    replies = log.settle(effects)
    body = replies[("c-1", "join")]
    assert (body.error_code, body.leader, body.generation_id) == (0, "c-1", 1)
    assert body.members == [JoinGroupResponseData.JoinGroupResponseMember(
        member_id="c-1", group_instance_id=None, metadata=b"r")]
    assert engine.groups["g"].state is S.COMPLETING_REBALANCE


@pytest.mark.parametrize("request_overrides, code", [
    ({"group_id": ""}, ErrorCode.INVALID_GROUP_ID),
    ({"session_timeout_ms": 50}, ErrorCode.INVALID_SESSION_TIMEOUT),
    ({"session_timeout_ms": 1_900_000}, ErrorCode.INVALID_SESSION_TIMEOUT),
    ({"member_id": "unknown"}, ErrorCode.UNKNOWN_MEMBER_ID),
])
def test_join_rejections(request_overrides: dict[str, Any], code: int):
    engine = new_engine()
    request = join_request()
    for name, value in request_overrides.items():
        setattr(request, name, value)
    outcome, _ = join(engine, request)
    assert outcome.body.error_code == code


def test_protocol_selection_votes_among_shared_protocols_and_rejects_none_shared():
    engine, log = new_engine(initial_rebalance_delay_ms=1000), Log()
    prefs = [[("roundrobin", b"1"), ("range", b"1")], [("range", b"2"), ("roundrobin", b"2")],
             [("range", b"3"), ("sticky", b"3")]]
    for protocols in prefs:
        outcome, effects = join(engine, join_request(protocols=protocols), now=0)
        assert outcome.parked is not None
        log.settle(effects)
    outcome, _ = join(engine, join_request(protocols=[("other", b"")]), now=0)
    assert outcome.body.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    outcome, _ = join(engine, join_request(protocol_type="connect"), now=0)
    assert outcome.body.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert log.settle(engine.tick(1000)) == {}  # members arrived during the delay
    replies = log.settle(engine.tick(2000))
    # Only "range" is supported by all three, so every vote goes to it.
    assert {body.protocol_name for body in
            (replies[(f"c-{i}", "join")] for i in (1, 2, 3))} == {"range"}
    leader = replies[("c-1", "join")]
    assert [m.metadata for m in leader.members] == [b"1", b"2", b"3"]
    assert replies[("c-2", "join")].members == []


def test_select_protocol_majority_wins():
    group = Group("g", 0)
    engine = new_engine()
    for i, protocols in enumerate([[("a", b""), ("b", b"")], [("b", b""), ("a", b"")],
                                   [("b", b""), ("a", b"")]]):
        engine.membership._add_and_rebalance(group, f"m{i}", _join(protocols), 0)
    assert group.select_protocol() == "b"


def _join(protocols):  # type: ignore[no-untyped-def]
    from broker.group.membership import _Join
    return _Join("", None, "c", "/h", 1000, 1000, "consumer", protocols)


def test_initial_delay_waits_and_extends_while_members_arrive():
    engine, log = new_engine(initial_rebalance_delay_ms=100), Log()
    join(engine, join_request(rebalance=1000), now=0)
    group = engine.groups["g"]
    assert group.state is S.PREPARING_REBALANCE and group.join_deadline == 100
    join(engine, join_request(rebalance=1000), now=50)
    assert log.settle(engine.tick(99)) == {}
    assert log.settle(engine.tick(100)) == {}  # a member arrived: one more delay
    assert group.join_deadline == 200
    replies = log.settle(engine.tick(200))
    assert {k for k in replies} == {("c-1", "join"), ("c-2", "join")}
    assert group.state is S.COMPLETING_REBALANCE


def test_rejoin_completes_when_all_members_joined_or_at_the_rebalance_timeout():
    engine, log = new_engine(), Log()
    ids = stable_group(engine, log, 3)
    group = engine.groups["g"]
    outcome, effects = join(engine, join_request(member=ids[0], protocols=[("range", b"x")]), 10)
    assert outcome.parked == ids[0] and group.state is S.PREPARING_REBALANCE
    assert heartbeat(engine, ids[1], 1, 20) == ErrorCode.REBALANCE_IN_PROGRESS
    log.settle(join(engine, join_request(member=ids[1]), 30)[1])
    assert group.state is S.PREPARING_REBALANCE  # ids[2] has not rejoined
    replies = log.settle(engine.tick(10 + 2000))
    assert set(replies) == {(ids[0], "join"), (ids[1], "join")}
    assert ids[2] not in group.members and group.generation == 2
    assert group.state is S.COMPLETING_REBALANCE


def heartbeat(engine, member, generation, now, group="g", instance=None):  # type: ignore[no-untyped-def]
    return engine.heartbeat(heartbeat_request(group, member, generation, instance), now)


def test_sync_errors_and_leader_assignment_is_written_before_members_get_theirs():
    engine, log = new_engine(), Log()
    ids = [join(engine, join_request(), 0, True)[0].body.member_id for _ in range(2)]
    join_all(engine, log, ids)
    assert engine.sync(sync_request("g", "nobody", 1), 0)[0].body.error_code == \
        ErrorCode.UNKNOWN_MEMBER_ID
    assert engine.sync(sync_request("g", ids[1], 7), 0)[0].body.error_code == \
        ErrorCode.ILLEGAL_GENERATION
    assert engine.sync(sync_request("missing", ids[1], 1), 0)[0].body.error_code == \
        ErrorCode.UNKNOWN_MEMBER_ID
    other_protocol = sync_request("g", ids[1], 1)
    other_protocol.protocol_name = "other"
    assert engine.sync(other_protocol, 0)[0].body.error_code == \
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    follower, _ = engine.sync(sync_request("g", ids[1], 1), 0)
    assert follower.parked == ids[1]
    leader, effects = engine.sync(sync_request("g", ids[0], 1, {ids[1]: b"a1"}), 0)
    assert leader.parked == ids[0] and effects.replies == []
    [write] = effects.writes
    stored = dict(write.entries)[GroupKey("g")]
    assert {m.member_id: m.assignment for m in stored.members} == {ids[0]: b"", ids[1]: b"a1"}
    assert engine.groups["g"].state is S.COMPLETING_REBALANCE  # not before the write
    replies = log.settle(effects)
    assert replies[(ids[1], "sync")].assignment == b"a1"
    assert replies[(ids[0], "sync")].assignment == b""
    assert engine.groups["g"].state is S.STABLE
    again, _ = engine.sync(sync_request("g", ids[1], 1), 5)
    assert again.body.assignment == b"a1"


def test_failed_assignment_write_propagates_the_error_and_rebalances():
    engine, log = new_engine(), Log()
    ids = [join(engine, join_request(), 0, True)[0].body.member_id for _ in range(2)]
    join_all(engine, log, ids)
    engine.sync(sync_request("g", ids[1], 1), 0)
    _, effects = engine.sync(sync_request("g", ids[0], 1, {ids[1]: b"a1"}), 0)
    replies = log.settle(effects, code=ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert replies[(ids[1], "sync")].error_code == ErrorCode.NOT_COORDINATOR
    assert engine.groups["g"].state is S.PREPARING_REBALANCE


def test_sync_during_rebalance_and_join_during_completing_rebalance():
    engine, log = new_engine(), Log()
    ids = stable_group(engine, log, 2)
    join(engine, join_request(member=ids[1], protocols=[("range", b"new")]), 1)
    assert engine.sync(sync_request("g", ids[0], 1), 1)[0].body.error_code == \
        ErrorCode.REBALANCE_IN_PROGRESS
    log.settle(join(engine, join_request(member=ids[0]), 2)[1])
    assert engine.groups["g"].state is S.COMPLETING_REBALANCE
    # A retried join with the same protocols gets the current generation again.
    outcome, _ = join(engine, join_request(member=ids[1], protocols=[("range", b"new")]), 3)
    assert (outcome.body.error_code, outcome.body.generation_id) == (0, 2)
    # A parked sync learns REBALANCE_IN_PROGRESS when a changed join restarts the rebalance.
    engine.sync(sync_request("g", ids[1], 2), 4)
    replies = log.settle(join(engine, join_request(member=ids[0], protocols=[("range", b"z")]),
                              5)[1])
    assert replies[(ids[1], "sync")].error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert engine.groups["g"].state is S.PREPARING_REBALANCE


def test_heartbeat_codes_per_state():
    engine, log = new_engine(), Log()
    assert heartbeat(engine, "x", 0, 0, group="none") == ErrorCode.UNKNOWN_MEMBER_ID
    ids = stable_group(engine, log, 2)
    assert heartbeat(engine, ids[0], 1, 1) == ErrorCode.NONE
    assert heartbeat(engine, ids[0], 0, 1) == ErrorCode.ILLEGAL_GENERATION
    assert heartbeat(engine, "stranger", 1, 1) == ErrorCode.UNKNOWN_MEMBER_ID
    join(engine, join_request(member=ids[0]), 2)
    assert heartbeat(engine, ids[1], 1, 3) == ErrorCode.REBALANCE_IN_PROGRESS
    engine.groups["g"].state = S.DEAD
    assert heartbeat(engine, ids[1], 1, 3) == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_session_timeout_removes_the_member_and_rebalances():
    engine, log = new_engine(), Log()
    ids = stable_group(engine, log, 2)
    group = engine.groups["g"]
    assert engine.next_deadline() == 1000
    assert heartbeat(engine, ids[0], 1, 900) == ErrorCode.NONE
    log.settle(engine.tick(1000))
    assert ids[1] not in group.members and group.state is S.PREPARING_REBALANCE
    replies = log.settle(join(engine, join_request(member=ids[0]), 1100)[1])
    assert replies[(ids[0], "join")].generation_id == 2


def test_last_member_leaving_empties_the_group_and_writes_it():
    engine, log = new_engine(), Log()
    ids = stable_group(engine, log, 2)
    top, codes, effects = engine.leave("g", [(ids[0], None), ("nobody", None)], 1)
    assert (top, codes) == (ErrorCode.NONE, [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID])
    group = engine.groups["g"]
    assert group.leader_id == ids[1] and group.state is S.PREPARING_REBALANCE
    log.settle(effects)
    _, codes, effects = engine.leave("g", [(ids[1], None)], 2)
    log.settle(effects)
    assert codes == [ErrorCode.NONE] and group.state is S.EMPTY and group.generation == 2
    assert log.entries[-1][1] == GroupKey("g") and log.entries[-1][2].members == ()
    assert engine.leave("missing", [("m", None)], 3)[1] == [ErrorCode.UNKNOWN_MEMBER_ID]


def test_leaving_member_parked_in_join_learns_unknown_member():
    engine, log = new_engine(initial_rebalance_delay_ms=1000), Log()
    join(engine, join_request())
    _, _, effects = engine.leave("g", [("c-1", None)], 1)
    replies = log.settle(effects)
    assert replies[("c-1", "join")].error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_static_member_rejoin_replaces_the_old_id_without_rebalance():
    engine, log = new_engine(initial_rebalance_delay_ms=0), Log()
    outcome, effects = join(engine, join_request(instance="i-1"), 0, True)
    old = outcome.parked
    assert old is not None  # static members skip MEMBER_ID_REQUIRED
    log.settle(effects)
    _, effects = engine.sync(sync_request("g", old, 1, {old: b"a"}, instance="i-1"), 0)
    log.settle(effects)
    outcome, effects = join(engine, join_request(instance="i-1"), 10, True)
    new = outcome.parked
    assert new != old
    replies = log.settle(effects)
    body = replies[(new, "join")]
    assert (body.error_code, body.generation_id, body.skip_assignment) == (0, 1, True)
    group = engine.groups["g"]
    assert group.state is S.STABLE and set(group.members) == {new}
    assert heartbeat(engine, old, 1, 11, instance="i-1") == ErrorCode.FENCED_INSTANCE_ID
    assert heartbeat(engine, new, 1, 11, instance="i-1") == ErrorCode.NONE
    assert engine.leave("g", [(old, "i-1")], 12)[1] == [ErrorCode.FENCED_INSTANCE_ID]
    assert engine.leave("g", [("", "i-1")], 12)[1] == [ErrorCode.NONE]


def test_static_member_fences_its_parked_old_incarnation():
    engine, log = new_engine(initial_rebalance_delay_ms=1000), Log()
    old = join(engine, join_request(instance="i-1"))[0].parked
    outcome, effects = join(engine, join_request(instance="i-1"), 5)
    replies = log.settle(effects)
    assert replies[(old, "join")].error_code == ErrorCode.FENCED_INSTANCE_ID
    assert outcome.parked in engine.groups["g"].members


def static_stable_group(engine, log, instances, dynamic=0):  # type: ignore[no-untyped-def]
    """A Stable group "g" of static members (the first leads) and then `dynamic` dynamic
    ones, all with sessions longer than their rebalance timeout (1000): ids by join order."""
    ids = [join(engine, join_request(instance=i, session=10_000, rebalance=1000))[0].parked
           for i in instances]
    ids += [join(engine, join_request(session=10_000, rebalance=1000))[0].parked
            for _ in range(dynamic)]
    replies = log.settle(engine.tick(100))  # the initial delay ends...
    replies.update(log.settle(engine.tick(200)))  # ...after one extension
    assert replies[(ids[0], "join")].leader == ids[0]
    instance_of = dict(zip(ids, [*instances, *[None] * dynamic]))
    for member in ids[1:]:
        engine.sync(sync_request("g", member, 1, instance=instance_of[member]), 200)
    log.settle(engine.sync(sync_request("g", ids[0], 1, {m: m.encode() for m in ids},
                                        instance=instance_of[ids[0]]), 200)[1])
    assert engine.groups["g"].state is S.STABLE
    return ids


def test_a_member_that_rejoined_leads_when_the_static_leader_did_not():
    engine, log = new_engine(), Log()
    leader, other = static_stable_group(engine, log, ["i-1", "i-2"])
    group = engine.groups["g"]
    # i-2 rejoins with a new subscription; the static leader i-1 stays away (it is being
    # restarted, say) and keeps its place until its session ends.
    outcome, effects = join(engine, join_request(member=other, instance="i-2", session=10_000,
                                                 rebalance=1000, protocols=[("range", b"new")]),
                            300)
    assert outcome.parked == other and log.settle(effects) == {}
    assert log.settle(engine.tick(300 + 999)) == {}
    replies = log.settle(engine.tick(300 + 1000))
    # Only a parked JoinGroup can carry the member list, so the member that rejoined leads.
    assert set(replies) == {(other, "join")}
    body = replies[(other, "join")]
    assert (body.error_code, body.generation_id, body.leader) == (0, 2, other)
    assert sorted(m.member_id for m in body.members) == sorted([leader, other])
    assert group.state is S.COMPLETING_REBALANCE and group.leader_id == other
    replies = log.settle(engine.sync(sync_request("g", other, 2, {leader: b"L", other: b"O"},
                                                  instance="i-2"), 1300)[1])
    assert replies[(other, "sync")].assignment == b"O"
    assert group.state is S.STABLE


@pytest.mark.parametrize("comes_back", [True, False])
def test_the_join_phase_waits_while_only_static_members_that_did_not_rejoin_remain(
        comes_back: bool):
    engine, log = new_engine(), Log()
    static, dynamic = static_stable_group(engine, log, ["i-1"], dynamic=1)
    group = engine.groups["g"]
    log.settle(engine.leave("g", [(dynamic, None)], 300)[2])
    assert group.state is S.PREPARING_REBALANCE and group.join_deadline == 1300
    # Nobody rejoined: no generation without anyone to lead it; another rebalance timeout.
    for deadline in (1300, 2300):
        assert log.settle(engine.tick(deadline)) == {}
        assert (group.state, group.generation) == (S.PREPARING_REBALANCE, 1)
        assert group.join_deadline == deadline + 1000 and static in group.members
    if comes_back:
        outcome, effects = join(engine, join_request(member=static, instance="i-1",
                                                     session=10_000, rebalance=1000), 2500)
        body = log.settle(effects)[(static, "join")]
        assert (body.generation_id, body.leader) == (2, static)
        assert [m.member_id for m in body.members] == [static]
        assert group.state is S.COMPLETING_REBALANCE
    else:
        # Its session (10 s from its SyncGroup at 200) ends, and the group with it.
        log.settle(engine.tick(10_199))
        assert static in group.members
        log.settle(engine.tick(10_200))
        assert (group.state, group.generation, group.members) == (S.EMPTY, 2, {})


def test_group_max_size():
    engine, log = new_engine(max_size=1), Log()
    join(engine, join_request())
    outcome, _ = join(engine, join_request())
    assert outcome.body.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED


def test_members_that_never_sync_are_removed_at_the_rebalance_timeout():
    engine, log = new_engine(), Log()
    ids = [join(engine, join_request(), 0, True)[0].body.member_id for _ in range(2)]
    join_all(engine, log, ids, session=5000, rebalance=1000)
    log.settle(engine.sync(sync_request("g", ids[0], 1, {}), 0)[1])
    group = engine.groups["g"]
    assert group.state is S.STABLE and group.pending_sync == {ids[1]}
    assert group.sync_deadline is not None
    log.settle(engine.tick(group.sync_deadline - 1))
    assert ids[1] in group.members
    log.settle(engine.tick(group.sync_deadline))
    assert ids[1] not in group.members and group.state is S.PREPARING_REBALANCE


def test_pending_member_expires_after_its_session_timeout():
    engine = new_engine()
    member = join(engine, join_request(), 0, True)[0].body.member_id
    engine.tick(1000)
    outcome, _ = join(engine, join_request(member=member), 1001, True)
    assert outcome.body.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_illegal_transitions_are_refused():
    group = Group("g", 0)
    with pytest.raises(IllegalStateTransition):
        group.transition(S.STABLE, 0)
    group.transition(S.PREPARING_REBALANCE, 0)
    with pytest.raises(IllegalStateTransition):
        group.transition(S.STABLE, 0)
    group.transition(S.COMPLETING_REBALANCE, 0)
    group.transition(S.STABLE, 0)
    group.transition(S.DEAD, 0)
