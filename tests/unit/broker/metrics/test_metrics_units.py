"""Pure parts of the metrics: the listener key, elections, remote end offsets."""

from __future__ import annotations

import uuid

import pytest

from broker.config.errors import ConfigError
from broker.config.metrics_listener import MetricsListener, parse_metrics_listener
from broker.metrics.controller_collector import ElectionCounter
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage
from metadata.records import PartitionChangeRecord, PartitionRecord, TopicRecord


def test_the_listener_defaults_to_loopback_9404_plus_the_node_offset() -> None:
    assert parse_metrics_listener(None, 1) == MetricsListener("127.0.0.1", 9404)
    assert parse_metrics_listener(None, 3) == MetricsListener("127.0.0.1", 9406)
    assert parse_metrics_listener("", 1) is None
    assert parse_metrics_listener("  ", 1) is None
    assert parse_metrics_listener("http://0.0.0.0:9500", 2) == MetricsListener("0.0.0.0", 9500)
    assert parse_metrics_listener("http://[::1]:9500/", 2) == MetricsListener("::1", 9500)


@pytest.mark.parametrize("text", ["127.0.0.1:9404", "https://127.0.0.1:9404",
                                  "http://127.0.0.1", "http://127.0.0.1:99999",
                                  "http://127.0.0.1:9404/other"])
def test_a_bad_listener_names_the_key(text: str) -> None:
    with pytest.raises(ConfigError, match="raftka.metrics.listener"):
        parse_metrics_listener(text, 1)


def test_the_election_counter_counts_leader_changes_and_unclean_ones() -> None:
    topic_id = uuid.uuid4()
    image = MetadataImage.empty()
    created = MetadataDelta(image)
    created.replay(TopicRecord(name="t", topic_id=topic_id), 1)
    created.replay(PartitionRecord(partition_id=0, topic_id=topic_id, replicas=(1, 2, 3),
                                   isr=(1, 2), leader=1), 1)
    counter = ElectionCounter()
    image = image.apply(created)
    counter.on_metadata_update(created, image)
    assert counter.elections == 0  # a new partition's first leader is not an election
    clean = MetadataDelta(image)
    clean.replay(PartitionChangeRecord(partition_id=0, topic_id=topic_id, leader=2), 2)
    image = image.apply(clean)
    counter.on_metadata_update(clean, image)
    unclean = MetadataDelta(image)
    unclean.replay(PartitionChangeRecord(partition_id=0, topic_id=topic_id, leader=3,
                                         isr=(3,)), 3)
    image = image.apply(unclean)
    counter.on_metadata_update(unclean, image)
    assert (counter.elections, counter.unclean_elections) == (2, 1)


async def test_remote_end_offsets_keep_old_values_on_failure_and_forget_unwanted() -> None:
    from broker.metrics.remote_offsets import RemoteEndOffsets

    wanted = [("a", 0), ("b", 1)]
    answers: list[object] = [{("a", 0): 10, ("b", 1): 3}, OSError("leader gone"), {("a", 0): 12}]

    async def read(partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[return-value]

    offsets = RemoteEndOffsets(lambda: wanted, read)
    await offsets.refresh()
    assert (offsets.end_offset(("a", 0)), offsets.end_offset(("b", 1))) == (10, 3)
    await offsets.refresh()  # the read fails: the last values stay
    assert offsets.end_offset(("a", 0)) == 10
    wanted.remove(("b", 1))
    await offsets.refresh()
    assert (offsets.end_offset(("a", 0)), offsets.end_offset(("b", 1))) == (12, None)
