"""Transactional offset commits in the group coordinator: pending until the producer's
marker, visible on commit, dropped on abort, and the same on reload from the log (where
control batches end them)."""

from __future__ import annotations

from broker.group.engine import GroupEngine, PartitionReplay
from broker.group.model import GroupCoordinatorSettings
from broker.group.offsets import FetchedPartition
from broker.group.records import OffsetKey, OffsetValue, build_batch, iter_log
from clients.protocol import ApiKey, ErrorCode, as_message
from clients.protocol.messages.offset_fetch import OffsetFetchRequestData
from clients.protocol.messages.txn_offset_commit import TxnOffsetCommitRequestData
from clients.records.batch import Record, encode_batch

PID = 77


def txn_commit(offset: int, producer_id: int = PID) -> TxnOffsetCommitRequestData:
    return as_message(ApiKey.TXN_OFFSET_COMMIT, 3, {
        "group_id": "g", "transactional_id": "t", "producer_id": producer_id,
        "producer_epoch": 0, "generation_id": -1, "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": "in", "partitions": [
            {"partition_index": 0, "committed_offset": offset,
             "committed_metadata": ""}]}]})


def fetch(engine: GroupEngine, stable: bool) -> FetchedPartition:
    wanted = [OffsetFetchRequestData.OffsetFetchRequestTopic(name="in", partition_indexes=[0])]
    return engine.fetch("g", wanted, stable)[0].partitions[0]


def committed_engine(offset: int) -> GroupEngine:
    engine = GroupEngine(GroupCoordinatorSettings())
    result = engine.commit_txn(txn_commit(offset), 1000)
    assert result.codes == {("in", 0): 0}
    assert result.write is not None and result.write.producer == (PID, 0)
    result.write.then(0)  # the transactional batch is written
    return engine


def test_pending_until_the_marker_then_visible_on_commit():
    engine = committed_engine(5)
    partition = engine.partition_for("g")
    assert fetch(engine, stable=False).committed_offset == -1
    assert fetch(engine, stable=True).error_code == ErrorCode.UNSTABLE_OFFSET_COMMIT
    engine.complete_txn(partition, PID, committed=True)
    assert fetch(engine, stable=True) == FetchedPartition(
        0, committed_offset=5, committed_leader_epoch=-1, metadata="", error_code=0)


def test_dropped_on_abort():
    engine = committed_engine(5)
    engine.complete_txn(engine.partition_for("g"), PID, committed=False)
    assert fetch(engine, stable=True).committed_offset == -1
    assert fetch(engine, stable=True).error_code == 0


def test_a_marker_of_another_producer_or_partition_changes_nothing():
    engine = committed_engine(5)
    partition = engine.partition_for("g")
    engine.complete_txn(partition, PID + 1, committed=True)
    engine.complete_txn(partition + 1, PID, committed=True)
    assert fetch(engine, stable=True).error_code == ErrorCode.UNSTABLE_OFFSET_COMMIT


def marker(producer_id: int, committed: bool) -> bytes:
    key = (0).to_bytes(2, "big") + (1 if committed else 0).to_bytes(2, "big")
    value = (0).to_bytes(2, "big") + (3).to_bytes(4, "big")
    return encode_batch([Record(None, 0, key, value)], producer_id=producer_id,
                        producer_epoch=0, is_transactional=True, is_control=True)


def replay(data: bytes) -> GroupEngine:
    r = PartitionReplay()
    r.apply(iter_log(data))
    engine = GroupEngine(GroupCoordinatorSettings())
    engine.install(engine.partition_for("g"), r, 0)
    return engine


def offset_batch(offset: int, producer_id: int | None) -> bytes:
    entries = [(OffsetKey("g", "in", 0), OffsetValue(offset))]
    return build_batch(entries, 0, None if producer_id is None else (producer_id, 0))


def test_reload_honours_control_batches():
    plain = offset_batch(3, None)
    # Committed: applied in marker order over the plain commit.
    assert fetch(replay(plain + offset_batch(9, PID) + marker(PID, True)),
                 stable=True).committed_offset == 9
    # Aborted: the plain commit stays.
    assert fetch(replay(plain + offset_batch(9, PID) + marker(PID, False)),
                 stable=True).committed_offset == 3
    # Still open at the end of the log: pending again after the reload.
    reloaded = replay(plain + offset_batch(9, PID))
    assert fetch(reloaded, stable=True).error_code == ErrorCode.UNSTABLE_OFFSET_COMMIT
    reloaded.complete_txn(reloaded.partition_for("g"), PID, committed=True)
    assert fetch(reloaded, stable=True).committed_offset == 9
