"""The pure parts of the admin tools: Kafka's topic patterns, get-offsets' --time and
--partitions, delete-records' offset JSON, and their output lines."""

from __future__ import annotations

import json

import pytest

from clients.cli.delete_records import parse_offset_json, result_lines
from clients.cli.get_offsets import offset_lines, parse_partitions, parse_time
from clients.cli.topic_pattern import compile_topic_pattern, matching_topics
from clients.admin import ListedOffset
from clients.protocol import ErrorCode, KafkaError

NAMES = ["orders", "orders-eu", "orders2", "payments", "__consumer_offsets"]


@pytest.mark.parametrize("text, expected", [
    ("orders", ["orders"]),  # matched whole: not orders-eu or orders2
    ("orders.*", ["orders", "orders-eu", "orders2"]),
    ("orders-eu,payments", ["orders-eu", "payments"]),  # a comma means "or"
    (" 'orders , payments' ", ["orders", "payments"]),  # blanks and quotes dropped
    (".*", sorted(NAMES)),
    ("nothing", []),
])
def test_topic_patterns_match_whole_names_as_kafka(text: str, expected: list[str]) -> None:
    assert matching_topics(compile_topic_pattern(text), NAMES) == expected


def test_internal_topics_can_be_left_out_and_bad_patterns_name_themselves() -> None:
    pattern = compile_topic_pattern(".*")
    assert "__consumer_offsets" not in matching_topics(pattern, NAMES, True,
                                                       ["__consumer_offsets"])
    with pytest.raises(ValueError, match=r"Invalid topic regex 'a\[': "):
        compile_topic_pattern("a[")


def test_time_accepts_kafka_numbers_names_and_timestamps() -> None:
    assert [parse_time(t) for t in ("-1", "latest", "-2", "EARLIEST", "-3",
                                    "max-timestamp", "0", "1700000000000")] == [
        -1, -1, -2, -2, -3, -3, 0, 1700000000000]
    for bad in ("-4", "soon", "", "1.5"):
        with pytest.raises(ValueError, match="Malformed time argument"):
            parse_time(bad)


def test_partition_filters_take_ids_and_inclusive_ranges() -> None:
    assert parse_partitions("0,2-3") == {0, 2, 3}
    assert parse_partitions(" 5 ") == {5}
    for bad in ("a", "3-1", "-1", "1-", "1,,2"):
        with pytest.raises(ValueError, match="Invalid partition filter"):
            parse_partitions(bad)


def test_offset_lines_sorted_and_without_partitions_lacking_an_offset() -> None:
    found = {("b", 0): ListedOffset(7, -1, 0), ("a", 10): ListedOffset(1, -1, 0),
             ("a", 2): None, ("a", 1): KafkaError(ErrorCode.LEADER_NOT_AVAILABLE)}
    assert offset_lines(found) == ["a:10:1", "b:0:7"]


def test_offset_json_as_kafka_writes_it() -> None:
    text = json.dumps({"partitions": [{"topic": "t", "partition": 0, "offset": 3},
                                      {"topic": "t", "partition": 1, "offset": -1}],
                       "version": 1})
    assert parse_offset_json(text) == {("t", 0): 3, ("t", 1): -1}
    # The version may be left out (Kafka reads it as 1).
    assert parse_offset_json('{"partitions": [{"topic": "u", "partition": 2, "offset": 0}]}'
                             ) == {("u", 2): 0}


@pytest.mark.parametrize("text, message", [
    ("{", "The input string is not a valid JSON"),
    ("[]", "must hold a JSON object"),
    ('{"version": 1}', "missing partitions field"),
    ('{"partitions": [], "version": 3}', "Not supported version field value 3"),
    ('{"partitions": []}', "names no partitions"),
    ('{"partitions": [{"partition": 0, "offset": 1}]}', "string 'topic'"),
    ('{"partitions": [{"topic": "t", "partition": "0", "offset": 1}]}', "integer 'partition'"),
    ('{"partitions": [{"topic": "t", "partition": 0, "offset": true}]}', "integer 'offset'"),
    ('{"partitions": [{"topic": "t", "partition": 0, "offset": -2}]}', "invalid offset -2"),
    ('{"partitions": [{"topic": "t", "partition": 0, "offset": 1},'
     ' {"topic": "t", "partition": 0, "offset": 2}]}', "duplicate topic partitions: t-0"),
])
def test_bad_offset_json_says_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_offset_json(text)


def test_delete_records_lines_are_kafkas() -> None:
    error = KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, "t-1: too far")
    assert result_lines({("t", 1): error, ("t", 0): 3}) == [
        "partition: t-0\tlow_watermark: 3",
        "partition: t-1\terror: OFFSET_OUT_OF_RANGE: t-1: too far"]
