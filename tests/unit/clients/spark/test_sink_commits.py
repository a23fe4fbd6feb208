"""The exactly-once sink's control records: keys, transactional ids, and finding a task's
last committed batch among fetched records (pure, no I/O)."""

from __future__ import annotations

import pyarrow as pa

from clients.spark.sink_commits import TaskKey, last_batch_in, batch_of, commit_record


def test_task_keys_and_control_records() -> None:
    key = TaskKey("query-1", 3)
    assert key.transactional_id() == "raftka-spark-query-1-3"
    assert key.encoded() == b'{"id":"query-1","partition":3}'
    assert 0 <= key.control_partition(10) < 10
    assert key.control_partition(10) == TaskKey("query-1", 3).control_partition(10)
    record_key, value = commit_record(key, 7, 120)
    assert record_key == key.encoded() and batch_of(value) == 7


def test_the_last_record_of_the_task_wins() -> None:
    mine, other = TaskKey("q", 0), TaskKey("q", 1)
    records = [commit_record(mine, 4, 10), commit_record(other, 9, 10),
               commit_record(mine, 5, 10), (None, b"{}")]
    batch = pa.RecordBatch.from_arrays(
        [pa.array([k for k, _ in records], pa.binary()),
         pa.array([v for _, v in records], pa.binary())], names=["key", "value"])
    assert last_batch_in(batch, mine.encoded(), None) == 5
    assert last_batch_in(batch, other.encoded(), 3) == 9
    assert last_batch_in(batch, TaskKey("q", 2).encoded(), 3) == 3
