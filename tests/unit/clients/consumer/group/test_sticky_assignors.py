"""The sticky and cooperative-sticky assignors: Kafka's wire format for their user data,
the constrained and general assignments, and the cooperative (KIP-429) member flow."""

from __future__ import annotations

import random
import struct

from clients.consumer.group.actions import GroupSettings, ClassicMemberState, Wait
from clients.consumer.group.assignors import (
    CooperativeStickyAssignor,
    MemberSubscription,
    StickyAssignor,
)
from clients.consumer.group.membership import GroupMembership
from clients.consumer.group.protocol import (
    Assignment,
    Subscription,
    decode_subscription,
    decode_sticky_user_data,
    encode_assignment,
    encode_sticky_user_data,
    encode_subscription,
)
from clients.consumer.group.sticky import StickyMember, cooperative_adjust, sticky_assign
from clients.protocol import ApiKey

TP = tuple[str, int]


def owners(assignment: dict[str, list[TP]]) -> dict[TP, str]:
    out: dict[TP, str] = {}
    for member, parts in assignment.items():
        for tp in parts:
            assert tp not in out, f"{tp} assigned twice"
            out[tp] = member
    return out


def check_valid(counts: dict[str, int], members: list[StickyMember],
                assignment: dict[str, list[TP]]) -> None:
    """Every partition of a subscribed topic once, and only to a subscriber."""
    by_id = {m.member_id: m for m in members}
    owner = owners(assignment)
    wanted = {(t, p) for m in members for t in m.topics if t in counts
              for p in range(counts[t])}
    assert set(owner) == wanted
    for tp, member in owner.items():
        assert tp[0] in by_id[member].topics


def check_balanced(assignment: dict[str, list[TP]]) -> None:
    sizes = [len(p) for p in assignment.values()]
    assert max(sizes) - min(sizes) <= 1, assignment


# ---- wire format ----

def test_sticky_user_data_is_kafkas_v1_layout() -> None:
    data = encode_sticky_user_data([("t", 1), ("t", 0)], 7)
    # [topic [partition]] then the generation, all big-endian.
    assert data == (struct.pack(">i", 1) + struct.pack(">h", 1) + b"t"
                    + struct.pack(">iii", 2, 0, 1) + struct.pack(">i", 7))
    assert decode_sticky_user_data(data) == ((("t", 0), ("t", 1)), 7)
    # v0 (no generation) still reads.
    assert decode_sticky_user_data(data[:-4]) == ((("t", 0), ("t", 1)), -1)


def test_subscription_v2_carries_owned_partitions_and_generation() -> None:
    sub = Subscription(("a", "b"), b"\x00\x00\x00\x05", (("a", 0), ("b", 2)), 5)
    data = encode_subscription(sub)
    assert data[:2] == struct.pack(">h", 2)
    assert data.endswith(struct.pack(">i", 5))
    assert decode_subscription(data) == sub


def test_cooperative_sticky_reads_the_generation_as_each_client_sends_it() -> None:
    assignor = CooperativeStickyAssignor()
    java_v1 = MemberSubscription("a", ("t",), owned_partitions=(("t", 0),),
                                 user_data=struct.pack(">i", 4))
    librdkafka_v1 = MemberSubscription("b", ("t",), owned_partitions=(("t", 0),),
                                       user_data=encode_sticky_user_data([("t", 0)], 3))
    # Both claim t-0; the newer generation keeps it.
    result = assignor.assign({"t": 2}, [java_v1, librdkafka_v1])
    assert result == {"a": [("t", 0)], "b": [("t", 1)]}
    assert assignor.user_data([], 9) == struct.pack(">i", 9)


def test_eager_sticky_reads_the_previous_assignment_from_user_data() -> None:
    assignor = StickyAssignor()
    a = MemberSubscription("a", ("t",), user_data=encode_sticky_user_data([("t", 2)], 1))
    b = MemberSubscription("b", ("t",), user_data=encode_sticky_user_data([("t", 0)], 1))
    assert assignor.assign({"t": 2 + 2}, [a, b]) == {
        "a": [("t", 2), ("t", 1)], "b": [("t", 0), ("t", 3)]}


# ---- constrained assignment (equal subscriptions) ----

def test_fresh_group_is_dealt_round_robin() -> None:
    members = [StickyMember(m, ("t",)) for m in "abc"]
    assert sticky_assign({"t": 7}, members) == {
        "a": [("t", 0), ("t", 3), ("t", 6)], "b": [("t", 1), ("t", 4)],
        "c": [("t", 2), ("t", 5)]}


def test_a_leaving_member_moves_only_its_own_partitions() -> None:
    before = sticky_assign({"t": 6}, [StickyMember(m, ("t",)) for m in "abc"])
    after = sticky_assign({"t": 6}, [StickyMember(m, ("t",), tuple(before[m]), 1)
                                     for m in "ab"])
    for m in "ab":
        assert set(before[m]) <= set(after[m])
    check_balanced(after)


def test_a_joining_member_takes_one_from_each_over_quota() -> None:
    a = StickyMember("a", ("t",), (("t", 0), ("t", 1), ("t", 2)), 3)
    b = StickyMember("b", ("t",), (("t", 3), ("t", 4), ("t", 5)), 3)
    c = StickyMember("c", ("t",))
    result = sticky_assign({"t": 6}, [a, b, c])
    assert result == {"a": [("t", 0), ("t", 1)], "b": [("t", 3), ("t", 4)],
                      "c": [("t", 2), ("t", 5)]}


def test_partitions_claimed_twice_in_one_generation_belong_to_neither() -> None:
    a = StickyMember("a", ("t",), (("t", 0), ("t", 1)), 2)
    b = StickyMember("b", ("t",), (("t", 1),), 2)
    result = sticky_assign({"t": 2}, [a, b])
    assert result["a"] == [("t", 0)] and result["b"] == [("t", 1)]
    # A claim from an older generation loses to a newer one.
    old = StickyMember("b", ("t",), (("t", 0), ("t", 1)), 1)
    assert sticky_assign({"t": 4}, [a, old])["a"][:2] == [("t", 0), ("t", 1)]


# ---- general assignment (unequal subscriptions) ----

def test_general_assignment_balances_members_with_different_topics() -> None:
    members = [StickyMember("a", ("t1",)), StickyMember("b", ("t1", "t2")),
               StickyMember("c", ("t1", "t2"))]
    counts = {"t1": 3, "t2": 3}
    result = sticky_assign(counts, members)
    check_valid(counts, members, result)
    check_balanced(result)


def test_general_assignment_drops_unsubscribed_partitions_then_rebalances() -> None:
    # a no longer subscribes to t2: t2-0 goes to b, which then holds three to a's one,
    # so one t1 partition moves to a (the only one a can take).
    a = StickyMember("a", ("t1",), (("t1", 0), ("t2", 0)), 1)
    b = StickyMember("b", ("t1", "t2"), (("t1", 1), ("t2", 1)), 1)
    result = sticky_assign({"t1": 2, "t2": 2}, [a, b])
    assert sorted(result["a"]) == [("t1", 0), ("t1", 1)]
    assert sorted(result["b"]) == [("t2", 0), ("t2", 1)]


def test_random_groups_stay_valid_balanced_and_sticky() -> None:
    rng = random.Random(17)
    topics = ["t0", "t1", "t2"]
    for _ in range(60):
        counts = {t: rng.randint(1, 6) for t in topics}
        owned: dict[str, tuple[TP, ...]] = {}
        generation = 0
        ids = [f"m{i}" for i in range(rng.randint(1, 5))]
        equal = rng.random() < 0.5
        subs = {m: tuple(topics) if equal else tuple(rng.sample(topics, rng.randint(1, 3)))
                for m in ids}
        for _round in range(4):
            members = [StickyMember(m, subs[m], owned.get(m, ()), generation) for m in ids]
            result = sticky_assign(counts, members)
            check_valid(counts, members, result)
            if equal:
                check_balanced(result)
                # Nobody under the quota loses a partition it owned.
                quota = sum(counts.values()) // len(ids)
                for m in ids:
                    if len(owned.get(m, ())) <= quota:
                        assert set(owned.get(m, ())) <= set(result[m])
            owned = {m: tuple(p) for m, p in result.items()}
            generation += 1
            if rng.random() < 0.5 and len(ids) > 1:
                ids.remove(rng.choice(ids))
            else:
                new = f"n{generation}"
                ids.append(new)
                subs[new] = tuple(topics) if equal else tuple(rng.sample(topics, 2))


# ---- cooperative ----

def test_moving_partitions_wait_for_the_next_rebalance() -> None:
    full = {"a": [("t", 0), ("t", 1)], "c": [("t", 2)]}
    group = [StickyMember("a", ("t",), (("t", 0), ("t", 1), ("t", 2)), 3),
             StickyMember("c", ("t",), (("t", 1),), 2)]
    assert cooperative_adjust(full, group) == {"a": [("t", 0), ("t", 1)], "c": []}


def _settings() -> GroupSettings:
    return GroupSettings("g", 10000, 30000, 3000, 100)


def _joined(m: GroupMembership, assigned: list[TP], now: float) -> None:
    """Drive ``m`` through a join (as a follower) and a sync giving ``assigned``."""
    m.rejoin_needed = True
    if m.coordinator is None:
        m.handle_response(ApiKey.FIND_COORDINATOR, {"error_code": 0, "node_id": 1,
                                                    "host": "h", "port": 1}, now)
    action = m.next_action(now)
    assert action.api_key == ApiKey.JOIN_GROUP
    m.handle_response(ApiKey.JOIN_GROUP, {
        "error_code": 0, "member_id": "me", "generation_id": m.generation_id + 1,
        "protocol_name": "cooperative-sticky", "leader": "other", "members": []}, now)
    assert m.next_action(now).api_key == ApiKey.SYNC_GROUP
    m.handle_response(ApiKey.SYNC_GROUP, {
        "error_code": 0, "assignment": encode_assignment(Assignment(tuple(assigned)))}, now)


def test_cooperative_member_revokes_only_what_moved_and_joins_again() -> None:
    m = GroupMembership(_settings(), [CooperativeStickyAssignor()])
    assert m.cooperative
    m.subscribe(["t"])
    _joined(m, [("t", 0), ("t", 1), ("t", 2)], 0)
    assert m.pending_added == [("t", 0), ("t", 1), ("t", 2)]
    m.take_assignment()
    # A rebalance: the member joins holding its partitions, revoking nothing first.
    m.rejoin_needed = True
    assert m.partitions_to_revoke() is None
    join = m.next_action(1)
    metadata = decode_subscription(join.body["protocols"][0]["metadata"])
    assert metadata.owned_partitions == (("t", 0), ("t", 1), ("t", 2))
    assert metadata.generation_id == 0
    m.handle_response(ApiKey.JOIN_GROUP, {
        "error_code": 0, "member_id": "me", "generation_id": 1,
        "protocol_name": "cooperative-sticky", "leader": "other", "members": []}, 1)
    m.next_action(1)
    m.handle_response(ApiKey.SYNC_GROUP, {"error_code": 0, "assignment": encode_assignment(
        Assignment((("t", 0), ("t", 1))))}, 1)
    assert m.pending_added == []
    assert m.partitions_to_revoke() == [("t", 2)]
    assert m.rejoin_needed
    # No join before the application has revoked them.
    assert isinstance(m.next_action(1), Wait)
    m.revoked([("t", 2)])
    assert m.owned == [("t", 0), ("t", 1)]
    m.take_assignment()
    assert m.state == ClassicMemberState.STABLE
    assert m.next_action(2).api_key == ApiKey.JOIN_GROUP


def test_eager_member_still_revokes_everything_before_joining() -> None:
    m = GroupMembership(_settings(), [StickyAssignor(), CooperativeStickyAssignor()])
    assert not m.cooperative
    m.subscribe(["t"])
    _joined(m, [("t", 0)], 0)
    m.take_assignment()
    m.rejoin_needed = True
    assert m.partitions_to_revoke() == [("t", 0)]
    m.revoked()
    join = m.next_action(1)
    sticky = decode_subscription(join.body["protocols"][0]["metadata"])
    assert sticky.owned_partitions == ()
    assert decode_sticky_user_data(sticky.user_data or b"") == ((("t", 0),), 0)


def test_a_member_that_stops_polling_leaves_the_group() -> None:
    m = GroupMembership(GroupSettings("g", 10000, 30000, 3000, 100),
                        [CooperativeStickyAssignor()])
    m.subscribe(["t"])
    m.on_poll(0)
    _joined(m, [("t", 0)], 0)
    m.take_assignment()
    m.handle_response(ApiKey.HEARTBEAT, {"error_code": 0}, 29_000)
    m.on_poll(1000)
    leave = m.next_action(31_001)          # max.poll.interval.ms (30000) after the poll
    assert leave.api_key == ApiKey.LEAVE_GROUP
    assert m.state == ClassicMemberState.UNJOINED and m.partitions_lost
    # Lost partitions are given up whole, without a commit, even when cooperative.
    assert m.partitions_to_revoke() is None        # no rejoin until the next poll
    m.on_poll(31_002)
    assert m.partitions_to_revoke() == [("t", 0)]
