"""minOffsetsPerTrigger / maxTriggerDelay and the default read limit of the stream reader
(decisions made without a cluster)."""

from __future__ import annotations

import time

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows

from clients.spark.options import parse_source_options
from clients.spark.stream_reader import RaftkaStreamReader


def reader(**options: str) -> RaftkaStreamReader:
    return RaftkaStreamReader(parse_source_options(
        {"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", **options}, streaming=True))


def test_default_read_limit_follows_the_options() -> None:
    assert isinstance(reader().getDefaultReadLimit(), ReadAllAvailable)
    assert reader(maxOffsetsPerTrigger="7").getDefaultReadLimit() == ReadMaxRows(7)
    assert reader(minOffsetsPerTrigger="5").getDefaultReadLimit() == ReadMinRows(5)


def test_min_offsets_wait_until_enough_records_or_the_delay() -> None:
    source = reader(minOffsetsPerTrigger="100", maxTriggerDelay="10m")
    begin = {("t", 0): 0, ("t", 1): 0}
    assert source._waits_for_more(begin, {("t", 0): 30, ("t", 1): 20})
    assert not source._waits_for_more(begin, {("t", 0): 60, ("t", 1): 40})
    source._last_batch_at = time.monotonic() - 601
    assert not source._waits_for_more(begin, {("t", 0): 30, ("t", 1): 20})
    # Trigger.AvailableNow must finish: it never waits.
    source = reader(minOffsetsPerTrigger="100")
    source._target = {("t", 0): 30}
    assert not source._waits_for_more(begin, {("t", 0): 30, ("t", 1): 0})


def test_the_reader_pickles_without_its_connection() -> None:
    import pickle

    source = reader(**{"kafka.group.id": "g"})
    copy = pickle.loads(pickle.dumps(source))
    assert copy.group_id == "g" and copy._client is None
    assert reader().group_id.startswith("spark-kafka-source-")
