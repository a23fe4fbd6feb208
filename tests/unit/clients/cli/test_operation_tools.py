"""The pure parts of `raftka leader-election` and `raftka log-dirs`: option checks, Kafka's
JSON formats and output lines."""

from __future__ import annotations

import argparse
import json

import pytest

from clients.cli.leader_election import chosen_partitions, parse_partitions_json, result_lines
from clients.cli.log_dirs import describe_json, parse_broker_list
from clients.admin.cluster_operations import ElectionResult, LogDirDescription, ReplicaLogDir
from clients.protocol import ErrorCode


def options(**given: object) -> argparse.Namespace:
    defaults = {"election_type": "PREFERRED", "all_topic_partitions": False, "topic": None,
                "partition": None, "path_to_json_file": None}
    return argparse.Namespace(**{**defaults, **given})


def test_the_election_json_file_is_kafkas_format() -> None:
    text = json.dumps({"partitions": [{"topic": "a", "partition": 0},
                                      {"topic": "b", "partition": 2}]})
    assert parse_partitions_json(text) == [("a", 0), ("b", 2)]


@pytest.mark.parametrize(("text", "message"), [
    ("{", "The input string is not a valid JSON"),
    ('{"other": []}', 'Replica election data is missing "partitions" field'),
    ('{"partitions": [{"topic": "a"}]}', 'needs a string "topic" and an integer "partition"'),
    ('{"partitions": [{"topic": "a", "partition": 0}, {"topic": "a", "partition": 0}]}',
     "Replica election data contains duplicate partitions: a-0"),
    ('{"partitions": []}', "Replica election data names no partitions"),
])
def test_a_bad_election_json_file_says_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_partitions_json(text)


def test_exactly_one_partition_source_is_required() -> None:
    assert chosen_partitions(options(all_topic_partitions=True)) is None
    assert chosen_partitions(options(topic="t", partition=3)) == [("t", 3)]
    with pytest.raises(ValueError, match="One and only one"):
        chosen_partitions(options())
    with pytest.raises(ValueError, match="One and only one"):
        chosen_partitions(options(all_topic_partitions=True, topic="t", partition=0))
    with pytest.raises(ValueError, match=r"\[partition\]"):
        chosen_partitions(options(topic="t"))
    with pytest.raises(ValueError, match=r"\[topic\]"):
        chosen_partitions(options(all_topic_partitions=True, partition=0))
    with pytest.raises(ValueError, match=r"\[election-type\]"):
        chosen_partitions(options(election_type=None, all_topic_partitions=True))


def test_election_results_print_as_kafkas_tool_prints_them() -> None:
    results = [ElectionResult("t", 0, ErrorCode.NONE, None),
               ElectionResult("t", 1, ErrorCode.NONE, None),
               ElectionResult("t", 2, ErrorCode.ELECTION_NOT_NEEDED, "not needed"),
               ElectionResult("u", 0, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, None)]
    lines, failures = result_lines("PREFERRED", results)
    assert lines == [
        "Successfully completed leader election (PREFERRED) for partitions t-0, t-1",
        "Valid replica already elected for partitions t-2",
        "Error completing leader election (PREFERRED) for partition: u-0: "
        "PREFERRED_LEADER_NOT_AVAILABLE: The preferred leader was not available."]
    assert failures == lines[2:]


def test_log_dirs_json_is_kafkas_document() -> None:
    described = [(1, [LogDirDescription("/data", ErrorCode.NONE,
                                        [ReplicaLogDir("t", 0, 120, 0, False)])])]
    assert describe_json(described) == (
        '{"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/data","error":null,'
        '"partitions":[{"partition":"t-0","size":120,"offsetLag":0,"isFuture":false}]}]}]}')
    assert parse_broker_list("1, 2") == [1, 2]
    assert parse_broker_list(None) is None
    with pytest.raises(ValueError, match="'x' is not a broker id"):
        parse_broker_list("1,x")
