"""Incremental fetch sessions (KIP-227): the leader's cache and the follower's plan."""

from __future__ import annotations

import random

from broker.replica.fetch_session import FetchSessionCache, next_epoch
from broker.replica_fetcher.session import FollowerFetchSession
from clients.protocol import ApiKey, ErrorCode, as_message
from clients.protocol.messages.fetch import FetchRequestData


def _fields(offset: int, partition: int = 0) -> dict:
    return {"partition": partition, "current_leader_epoch": 1, "fetch_offset": offset,
            "last_fetched_epoch": 1, "log_start_offset": 0, "partition_max_bytes": 1 << 20}


def _body(session_id: int, epoch: int, topics: list, forgotten: list = ()) -> FetchRequestData:
    return as_message(ApiKey.FETCH, 12, {
        "session_id": session_id, "session_epoch": epoch, "topics": topics,
        "forgotten_topics_data": list(forgotten)})


def _entry(index: int, hw: int, records: bytes = b"", error: int = 0) -> dict:
    return {"partition_index": index, "error_code": error, "high_watermark": hw,
            "last_stable_offset": hw, "log_start_offset": 0, "records": records}


def test_epochs_wrap_past_int32_max_to_one():
    assert next_epoch(0) == 1 and next_epoch(7) == 8 and next_epoch(2**31 - 1) == 1


def test_only_followers_get_sessions():
    cache = FetchSessionCache(rng=random.Random(1))
    topics = [{"topic": "t", "partitions": [_fields(0)]}]
    assert cache.context(_body(0, 0, topics), replica_id=-1).session_id == 0
    follower = cache.context(_body(0, 0, topics), replica_id=2)
    assert follower.session_id > 0 and not follower.incremental and len(cache) == 1


def test_incremental_fetch_reads_the_whole_session_and_answers_what_changed():
    cache = FetchSessionCache(rng=random.Random(1))
    full = cache.context(_body(0, 0, [{"topic": "t", "partitions": [
        _fields(5, 0), _fields(9, 1)]}]), replica_id=2)
    session = full.session
    assert session is not None
    first = session.answer([{"topic": "t", "partitions": [_entry(0, 5), _entry(1, 9)]}], False)
    assert [e["partition_index"] for e in first[0]["partitions"]] == [0, 1]
    # Partition 0 moved on; partition 1 is not named, yet read from the session.
    ctx = cache.context(_body(session.session_id, 1, [{"topic": "t", "partitions": [
        _fields(6, 0)]}]), replica_id=2)
    assert ctx.incremental and ctx.error_code == ErrorCode.NONE
    assert [(p.partition, p.fetch_offset) for p in ctx.topics[0].partitions] == [
        (0, 6), (1, 9)]
    answer = session.answer([{"topic": "t", "partitions": [
        _entry(0, 6), _entry(1, 9)]}], True)
    # Only the high watermark that moved is news.
    assert [e["partition_index"] for e in answer[0]["partitions"]] == [0]
    quiet = cache.context(_body(session.session_id, 2, []), replica_id=2)
    assert session.answer([{"topic": "t", "partitions": [
        _entry(0, 6), _entry(1, 9)]}], quiet.incremental) == []
    with_data = cache.context(_body(session.session_id, 3, []), replica_id=2)
    answer = session.answer([{"topic": "t", "partitions": [
        _entry(0, 6), _entry(1, 9, b"batch"), ]}], with_data.incremental)
    assert [e["partition_index"] for e in answer[0]["partitions"]] == [1]


def test_forgotten_partitions_leave_the_session():
    cache = FetchSessionCache(rng=random.Random(1))
    session = cache.context(_body(0, 0, [{"topic": "t", "partitions": [
        _fields(0, 0), _fields(0, 1)]}]), replica_id=2).session
    assert session is not None
    ctx = cache.context(_body(session.session_id, 1, [], [{"topic": "t", "partitions": [1]}]),
                        replica_id=2)
    assert [p.partition for t in ctx.topics for p in t.partitions] == [0]


def test_session_errors():
    cache = FetchSessionCache(rng=random.Random(1))
    session = cache.context(_body(0, 0, []), replica_id=2).session
    assert session is not None
    assert cache.context(_body(12345, 1, []), 2).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert cache.context(_body(session.session_id, 1, []), 3).error_code == \
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert cache.context(_body(session.session_id, 5, []), 2).error_code == \
        ErrorCode.INVALID_FETCH_SESSION_EPOCH
    # Epoch -1 closes the session.
    assert cache.context(_body(session.session_id, -1, []), 2).session_id == 0
    assert cache.get(session.session_id) is None


def test_the_least_recently_used_session_is_evicted():
    cache = FetchSessionCache(max_sessions=2, rng=random.Random(1))
    first = cache.context(_body(0, 0, []), 1).session
    second = cache.context(_body(0, 0, []), 2).session
    assert first is not None and second is not None
    cache.context(_body(first.session_id, 1, []), 1)
    cache.context(_body(0, 0, []), 3)
    assert cache.get(first.session_id) is first and cache.get(second.session_id) is None


def test_follower_names_only_changed_partitions_once_the_session_is_open():
    session = FollowerFetchSession()
    wanted = {("t", 0): _fields(5, 0), ("t", 1): _fields(9, 1)}
    plan = session.plan(wanted)
    assert (plan.session_id, plan.session_epoch, len(plan.named)) == (0, 0, 2)
    session.answered(plan, ErrorCode.NONE, 77)
    plan = session.plan({("t", 0): _fields(6, 0), ("t", 1): _fields(9, 1)})
    assert (plan.session_id, plan.session_epoch) == (77, 1)
    assert plan.topics() == [{"topic": "t", "partitions": [_fields(6, 0)]}]
    session.answered(plan, ErrorCode.NONE, 77)
    plan = session.plan({("t", 0): _fields(6, 0)})
    assert plan.session_epoch == 2 and plan.named == {}
    assert plan.forgotten_topics() == [{"topic": "t", "partitions": [1]}]
    session.answered(plan, ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0)
    plan = session.plan({("t", 0): _fields(6, 0)})
    assert (plan.session_id, plan.session_epoch, list(plan.named)) == (0, 0, [("t", 0)])


def test_follower_stays_on_full_fetches_when_the_leader_declines_a_session():
    session = FollowerFetchSession()
    wanted = {("t", 0): _fields(5)}
    plan = session.plan(wanted)
    session.answered(plan, ErrorCode.NONE, 0)
    plan = session.plan(wanted)
    assert (plan.session_id, plan.session_epoch, list(plan.named)) == (0, 0, [("t", 0)])
