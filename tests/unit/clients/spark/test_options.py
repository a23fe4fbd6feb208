"""The source's and sink's options: parsing, defaults, and each refusal naming its option."""

from __future__ import annotations

import pytest

from clients.producer.config import ProducerConfig
from clients.spark.options import (
    SparkOptionError,
    parse_duration_ms,
    parse_source_options,
)
from clients.spark.sink_options import parse_sink_options
from clients.spark.writer import producer_settings

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def source(streaming: bool = False, **options: str):  # type: ignore[no-untyped-def]
    return parse_source_options({**BASE, **options}, streaming=streaming)


def test_defaults_are_those_of_spark_kafka_source() -> None:
    batch = source(subscribe="a,b")
    assert batch.selection.topics == ("a", "b")
    assert batch.starting.kind == "earliest" and batch.ending.kind == "latest"
    assert batch.fail_on_data_loss and not batch.include_headers and not batch.read_committed
    assert batch.group_id_prefix == "spark-kafka-relation"
    stream = source(streaming=True, subscribe="a")
    assert stream.starting.kind == "latest"
    assert stream.max_trigger_delay_ms == 15 * 60_000
    assert stream.group_id_prefix == "spark-kafka-source"
    assert stream.poll_timeout_ms == 120_000 and stream.fetch_offset_retries == 3


def test_kafka_options_pass_through_without_prefix() -> None:
    parsed = source(subscribe="a", **{"kafka.client.id": "me", "kafka.group.id": "g",
                                      "kafka.isolation.level": "read_committed"})
    assert parsed.kafka == {"bootstrap.servers": "127.0.0.1:9092", "client.id": "me"}
    assert parsed.group_id == "g" and parsed.read_committed


def test_offsets_json_and_timestamps() -> None:
    parsed = source(subscribe="a", startingOffsets='{"a":{"0":5,"1":-2}}',
                    endingOffsets='{"a":{"0":-1}}')
    assert parsed.starting.offsets == {"a": {0: 5, 1: -2}}
    assert parsed.ending.offsets == {"a": {0: -1}}
    by_ts = source(subscribe="a", startingOffsetsByTimestamp='{"a":{"0":1000}}',
                   startingOffsets="earliest")
    assert by_ts.starting.kind == "timestamps" and by_ts.starting.timestamps == {"a": {0: 1000}}
    both = source(subscribe="a", startingTimestamp="7", startingOffsetsByTimestamp='{"a":{"0":1}}')
    assert both.starting.kind == "timestamp" and both.starting.timestamp == 7


def test_assign_and_pattern() -> None:
    assigned = source(assign='{"a":[1,0],"b":[2]}')
    assert assigned.selection.partitions == (("a", 0), ("a", 1), ("b", 2))
    pattern = source(subscribePattern="events-.*")
    assert pattern.selection.matches("events-1") and not pattern.selection.matches("xevents-1")


def test_duration() -> None:
    assert parse_duration_ms("x", "30s") == 30_000
    assert parse_duration_ms("x", "250") == 250
    assert parse_duration_ms("x", "2h") == 7_200_000


@pytest.mark.parametrize(("options", "streaming", "named"), [
    ({}, False, "subscribe"),
    ({"subscribe": "a", "assign": '{"a":[0]}'}, False, "assign"),
    ({"subscribe": "a", "subscribePattern": "a.*"}, True, "subscribePattern"),
    ({"subscribe": "a", "startingOffsets": "latest"}, False, "startingOffsets"),
    ({"subscribe": "a", "startingOffsets": '{"a":{"0":-1}}'}, False, "startingOffsets"),
    ({"subscribe": "a", "endingOffsets": "earliest"}, False, "endingOffsets"),
    ({"subscribe": "a", "endingOffsets": '{"a":{"0":-2}}'}, False, "endingOffsets"),
    ({"subscribe": "a", "endingOffsets": "latest"}, True, "endingOffsets"),
    ({"subscribe": "a", "endingTimestamp": "5"}, True, "endingTimestamp"),
    ({"subscribe": "a", "endingOffsetsByTimestamp": '{"a":{"0":5}}'}, True,
     "endingOffsetsByTimestamp"),
    ({"subscribe": "a", "maxOffsetsPerTrigger": "10"}, False, "maxOffsetsPerTrigger"),
    ({"subscribe": "a", "maxOffsetsPerTrigger": "0"}, True, "maxOffsetsPerTrigger"),
    ({"subscribe": "a", "minPartitions": "x"}, False, "minPartitions"),
    ({"subscribe": "a", "failOnDataLoss": "maybe"}, False, "failOnDataLoss"),
    ({"subscribe": "a", "kafka.auto.offset.reset": "earliest"}, False, "kafka.auto.offset.reset"),
    ({"subscribe": "a", "kafka.enable.auto.commit": "true"}, True, "kafka.enable.auto.commit"),
    ({"subscribe": "a", "kafka.key.deserializer": "x"}, False, "kafka.key.deserializer"),
    ({"subscribe": "a", "kafka.isolation.level": "dirty"}, False, "kafka.isolation.level"),
    ({"subscribe": "a", "maxTriggerDelay": "soon"}, True, "maxTriggerDelay"),
    ({"subscribe": "a", "startingOffsets": "[1]"}, False, "startingOffsets"),
    ({"assign": '{"a":"0"}'}, False, "assign"),
    ({"subscribePattern": "("}, False, "subscribePattern"),
    ({"subscribe": "a", "startingOffsetsByTimestampStrategy": "x"}, False,
     "startingOffsetsByTimestampStrategy"),
])
def test_bad_options_are_refused_naming_the_option(options: dict[str, str], streaming: bool,
                                                   named: str) -> None:
    with pytest.raises(SparkOptionError, match=f"'{named}"):
        parse_source_options({**BASE, **options}, streaming=streaming)


def test_bootstrap_servers_are_required() -> None:
    with pytest.raises(SparkOptionError, match="'kafka.bootstrap.servers'"):
        parse_source_options({"subscribe": "a"}, streaming=False)


def test_sink_options() -> None:
    parsed = parse_sink_options({**BASE, "topic": "out", "kafka.acks": "1"})
    assert parsed.topic == "out" and parsed.kafka["acks"] == "1"
    with pytest.raises(SparkOptionError, match="'kafka.value.serializer'"):
        parse_sink_options({**BASE, "kafka.value.serializer": "x"})


def test_sink_producer_is_idempotent_with_acks_all_by_default() -> None:
    config = ProducerConfig.from_mapping(producer_settings(parse_sink_options(BASE)))
    assert config.acks == -1 and config.enable_idempotence
    assert config.transactional_id is None


def test_exactly_once_options() -> None:
    plain = parse_sink_options({**BASE, "exactlyOnce": "false"})
    assert not plain.exactly_once and plain.crash_before_commit_attempts == 0
    parsed = parse_sink_options({**BASE, "exactlyOnce": "true"})
    assert parsed.exactly_once and parsed.control_topic == "__raftka_spark_sink_commits"
    assert parsed.write_id is None
    parsed = parse_sink_options({**BASE, "exactlyOnce": "TRUE",
                                 "exactlyOnceControlTopic": "commits",
                                 "exactlyOnceWriteId": "nightly-2026-11-25",
                                 "test.crashBeforeCommitAttempts": "1"})
    assert (parsed.control_topic, parsed.write_id, parsed.crash_before_commit_attempts) == (
        "commits", "nightly-2026-11-25", 1)
    cases = [
        ({"exactlyOnce": "yes"}, "'exactlyOnce' must be true or false"),
        ({"exactlyOnceWriteId": "x"}, "'exactlyOnceWriteId' needs exactlyOnce=true"),
        ({"exactlyOnceControlTopic": "c"}, "'exactlyOnceControlTopic' needs exactlyOnce=true"),
        ({"exactlyOnce": "true", "exactlyOnceWriteId": " "}, "'exactlyOnceWriteId' must not"),
        ({"exactlyOnce": "true", "kafka.enable.idempotence": "false"},
         "'kafka.enable.idempotence' cannot be false"),
        ({"kafka.transactional.id": "mine"}, "'kafka.transactional.id' is not supported"),
    ]
    for options, message in cases:
        with pytest.raises(SparkOptionError, match=message):
            parse_sink_options({**BASE, **options})
