"""OffsetCommit/OffsetFetch rules, retention, DeleteGroups, and loading from the log."""

from __future__ import annotations

from broker.group.model import Effects, ClassicGroupState
from broker.group.offsets import FetchedPartition, FetchedTopic
from broker.group.records import GroupKey, OffsetKey, build_batch, iter_entries
from clients.protocol import ErrorCode
from clients.protocol.messages.offset_fetch import OffsetFetchRequestData
from tests.unit.broker.group.engine_helpers import (
    Log,
    commit_request,
    join_all,
    join_request,
    new_engine,
    sync_request,
)

S = ClassicGroupState
Topic = OffsetFetchRequestData.OffsetFetchRequestTopic
DAY_MS = 86_400_000


def commit(engine, log, request, now=0, topic_exists=None, code=0):  # type: ignore[no-untyped-def]
    result = engine.commit(request, now, topic_exists)
    if result.write is not None:
        log.settle(Effects(writes=[result.write]), code)
    return result.codes


def stable(engine, log):  # type: ignore[no-untyped-def]
    ids = [engine.join(join_request(), client_id="c", client_host="/h",
                       require_known_member_id=True, now_ms=0)[0].body.member_id
           for _ in range(2)]
    join_all(engine, log, ids)
    engine.sync(sync_request("g", ids[1], 1), 0)
    log.settle(engine.sync(sync_request("g", ids[0], 1, {}), 0)[1])
    return ids


def test_standalone_commit_creates_a_simple_group_and_fetch_returns_it():
    engine, log = new_engine(), Log()
    codes = commit(engine, log, commit_request("solo", {("t", 0): 5, ("t", 1): 7}, metadata="m"))
    assert codes == {("t", 0): 0, ("t", 1): 0}
    assert engine.groups["solo"].protocol_type is None
    fetched = engine.fetch("solo", [Topic(name="t", partition_indexes=[0, 2])])
    assert fetched == [FetchedTopic("t", (
        FetchedPartition(0, committed_offset=5, committed_leader_epoch=3, metadata="m",
                         error_code=0),
        FetchedPartition(2, committed_offset=-1, committed_leader_epoch=-1, metadata="",
                         error_code=0)))]
    assert [t.name for t in engine.fetch("solo", None)] == ["t"]
    assert engine.fetch("nobody", None) == []


def test_commit_checks_generation_member_and_state():
    engine, log = new_engine(), Log()
    assert set(commit(engine, log, commit_request("new", {("t", 0): 1}, generation=3))
               .values()) == {ErrorCode.ILLEGAL_GENERATION}
    assert set(commit(engine, log, commit_request("", {("t", 0): 1})).values()) == \
        {ErrorCode.INVALID_GROUP_ID}
    ids = stable(engine, log)
    cases = [(dict(generation=-1, member=""), ErrorCode.UNKNOWN_MEMBER_ID),
             (dict(generation=1, member="stranger"), ErrorCode.UNKNOWN_MEMBER_ID),
             (dict(generation=9, member=ids[0]), ErrorCode.ILLEGAL_GENERATION),
             (dict(generation=1, member=ids[0]), ErrorCode.NONE)]
    for kwargs, code in cases:
        codes = commit(engine, log, commit_request("g", {("t", 0): 1}, **kwargs))
        assert codes == {("t", 0): code}, kwargs
    engine.join(join_request(member=ids[0]), client_id="c", client_host="/h",
                require_known_member_id=True, now_ms=1)
    assert engine.groups["g"].state is S.PREPARING_REBALANCE
    assert commit(engine, log, commit_request("g", {("t", 0): 2}, generation=1, member=ids[0])) \
        == {("t", 0): ErrorCode.NONE}


def test_commit_per_partition_errors_and_write_failures():
    engine, log = new_engine(offset_metadata_max_bytes=4), Log()
    codes = commit(engine, log, commit_request("g", {("t", 0): 1, ("gone", 0): 1}),
                   topic_exists=lambda name: name == "t")
    assert codes == {("t", 0): 0, ("gone", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    codes = commit(engine, log, commit_request("g", {("t", 1): 1}, metadata="12345"))
    assert codes == {("t", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE}
    codes = commit(engine, log, commit_request("g", {("t", 2): 1}), code=ErrorCode.REQUEST_TIMED_OUT)
    assert codes == {("t", 2): ErrorCode.COORDINATOR_NOT_AVAILABLE}
    codes = commit(engine, log, commit_request("g", {("t", 2): 1}),
                   code=ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert codes == {("t", 2): ErrorCode.NOT_COORDINATOR}
    assert ("t", 2) not in engine.groups["g"].offsets  # failed writes are not visible


def test_offsets_of_an_empty_group_expire_from_when_it_became_empty():
    engine, log = new_engine(offsets_retention_ms=DAY_MS), Log()
    ids = stable(engine, log)
    commit(engine, log, commit_request("g", {("t", 0): 1}, generation=1, member=ids[0]), now=0)
    assert log.settle(engine.expire_offsets(2 * DAY_MS)) == {}
    assert ("t", 0) in engine.groups["g"].offsets  # a Stable group that subscribes to nothing parseable keeps them
    _, _, effects = engine.leave("g", [(ids[0], None), (ids[1], None)], 3 * DAY_MS)
    log.settle(effects)
    assert engine.groups["g"].state is S.EMPTY
    log.settle(engine.expire_offsets(4 * DAY_MS - 1))
    assert ("t", 0) in engine.groups["g"].offsets
    log.settle(engine.expire_offsets(4 * DAY_MS))
    assert "g" not in engine.groups
    assert log.entries[-2:] == [(engine.partition_for("g"), OffsetKey("g", "t", 0), None),
                                (engine.partition_for("g"), GroupKey("g"), None)]


def test_explicit_retention_and_standalone_offsets_expire_from_the_commit():
    engine, log = new_engine(offsets_retention_ms=DAY_MS), Log()
    commit(engine, log, commit_request("a", {("t", 0): 1}, retention=1000), now=0)
    commit(engine, log, commit_request("b", {("t", 0): 1}), now=0)
    log.settle(engine.expire_offsets(1000))
    assert "a" not in engine.groups and "b" in engine.groups
    log.settle(engine.expire_offsets(DAY_MS))
    assert "b" not in engine.groups


def test_delete_groups():
    engine, log = new_engine(), Log()
    assert engine.delete("missing", 0) == (ErrorCode.GROUP_ID_NOT_FOUND, None)
    assert engine.delete("", 0) == (ErrorCode.INVALID_GROUP_ID, None)
    stable(engine, log)
    assert engine.delete("g", 0) == (ErrorCode.NON_EMPTY_GROUP, None)
    commit(engine, log, commit_request("solo", {("t", 0): 1}))
    code, write = engine.delete("solo", 0)
    assert code == 0 and write is not None
    assert write.entries == [(OffsetKey("solo", "t", 0), None), (GroupKey("solo"), None)]
    assert "solo" not in engine.groups


def test_list_and_describe():
    engine, log = new_engine(), Log()
    ids = stable(engine, log)
    commit(engine, log, commit_request("solo", {("t", 0): 1}))
    assert sorted((g.group_id, g.group_state) for g in engine.list_groups()) == [
        ("g", "Stable"), ("solo", "Empty")]
    assert [g.group_id for g in engine.list_groups(["stable"])] == ["g"]
    described = engine.describe("g")
    assert (described.group_state, described.protocol_type, described.protocol_data) \
        == ("Stable", "consumer", "range")
    assert [m.member_id for m in described.members] == ids
    assert engine.describe("unknown").group_state == "Dead"


def test_loading_the_written_records_rebuilds_the_same_groups_and_offsets():
    engine, log = new_engine(), Log()
    ids = stable(engine, log)
    commit(engine, log, commit_request("g", {("t", 0): 11, ("t", 1): 12}, generation=1,
                                       member=ids[0]))
    commit(engine, log, commit_request("solo", {("u", 0): 3}))
    commit(engine, log, commit_request("doomed", {("u", 0): 3}))
    _, write = engine.delete("doomed", 0)
    log.settle(Effects(writes=[write]))
    by_partition: dict[int, list] = {}
    for partition, key, value in log.entries:
        by_partition.setdefault(partition, []).append((key, value))
    reloaded = new_engine()
    for partition, entries in by_partition.items():
        reloaded.load(partition, iter_entries(build_batch(entries, 0)), now_ms=0)
    for group_id in ("g", "solo"):
        assert reloaded.describe(group_id) == engine.describe(group_id)
        assert reloaded.groups[group_id].offsets == engine.groups[group_id].offsets
        assert reloaded.groups[group_id].generation == engine.groups[group_id].generation
    assert "doomed" not in reloaded.groups
    unloaded = reloaded.unload(reloaded.partition_for("g"))
    assert "g" not in reloaded.groups and unloaded.replies == []


def test_require_stable_reports_a_commit_still_being_written():
    engine, log = new_engine(), Log()
    commit(engine, log, commit_request("g", {("t", 0): 1, ("t", 1): 4}))
    in_flight = engine.commit(commit_request("g", {("t", 0): 2}), 1)
    wanted = [Topic(name="t", partition_indexes=[0, 1])]

    def fetched(require_stable: bool) -> list[tuple[int, int, int]]:
        return [(p.partition, p.committed_offset, p.error_code)
                for t in engine.fetch("g", wanted, require_stable) for p in t.partitions]

    assert fetched(True) == [(0, -1, ErrorCode.UNSTABLE_OFFSET_COMMIT), (1, 4, 0)]
    assert fetched(False) == [(0, 1, 0), (1, 4, 0)]
    # The listing of every offset skips the check, as Kafka's does.
    assert [p.error_code for t in engine.fetch("g", None, True) for p in t.partitions] \
        == [0, 0]
    assert in_flight.write is not None
    log.settle(Effects(writes=[in_flight.write]))
    assert fetched(True) == [(0, 2, 0), (1, 4, 0)]


def test_an_offset_commit_counts_as_the_members_heartbeat():
    engine, log = new_engine(), Log()
    ids = stable(engine, log)
    session = engine.groups["g"].members[ids[0]].session_timeout_ms
    # Only the first member keeps its session alive, and only by committing.
    for now in range(session // 2, 3 * session, session // 2):
        commit(engine, log, commit_request("g", {("t", 0): now}, generation=1, member=ids[0]),
               now=now)
        log.settle(engine.tick(now))
    assert list(engine.groups["g"].members) == [ids[0]]


def test_offset_delete_refuses_consumed_topics_and_active_non_consumer_groups():
    from clients.consumer.group.protocol import Subscription, encode_subscription

    engine, log = new_engine(), Log()
    metadata = encode_subscription(Subscription(("t",)))
    ids = [engine.join(join_request(protocols=(("range", metadata),)), client_id="c",
                       client_host="/h", require_known_member_id=True, now_ms=0)[0]
           .body.member_id for _ in range(2)]
    join_all(engine, log, ids, protocols=(("range", metadata),))
    engine.sync(sync_request("g", ids[1], 1), 0)
    log.settle(engine.sync(sync_request("g", ids[0], 1, {}), 0)[1])
    commit(engine, log, commit_request("g", {("t", 0): 5, ("u", 0): 7}, generation=1,
                                       member=ids[0]))
    code, codes, write = engine.delete_offsets("g", [("t", 0), ("u", 0)])
    assert code == ErrorCode.NONE
    assert codes == {("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("u", 0): ErrorCode.NONE}
    assert write is not None and write.entries == [(OffsetKey("g", "u", 0), None)]
    assert set(engine.groups["g"].offsets) == {("t", 0)}
    assert engine.delete_offsets("missing", [("t", 0)])[0] == ErrorCode.GROUP_ID_NOT_FOUND

    connect = new_engine()
    member = connect.join(join_request("k", protocol_type="connect"), client_id="c",
                          client_host="/h", require_known_member_id=False, now_ms=0)[0]
    assert member.body is not None or member.parked
    assert connect.delete_offsets("k", [("t", 0)])[0] == ErrorCode.NON_EMPTY_GROUP
