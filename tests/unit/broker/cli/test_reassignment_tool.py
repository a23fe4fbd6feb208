"""The pure parts of `raftka reassign-partitions`: Kafka's JSON files, the option checks,
the proposed plan, the throttles and the lines it prints."""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter

import pytest

from broker.cli.main import build_parser
from broker.cli.reassign_partitions import chosen_action
from broker.cli.reassignment_json import (ReassignmentInputError, format_reassignment,
                                          parse_broker_list, parse_reassignment,
                                          parse_topics_to_move)
from broker.cli import reassignment_plan as plan
from metadata.placement import UsableBroker


def reassignment(*partitions: dict[str, object], version: object = 1) -> str:
    return json.dumps({"version": version, "partitions": list(partitions)})


def test_the_reassignment_file_is_kafkas_format() -> None:
    text = reassignment({"topic": "t", "partition": 1, "replicas": [2, 3, 4],
                         "log_dirs": ["any", "any", "any"]},
                        {"topic": "t", "partition": 0, "replicas": [4, 2]})
    assert parse_reassignment(text) == {("t", 1): (2, 3, 4), ("t", 0): (4, 2)}


def test_written_plans_are_compact_sorted_and_read_back() -> None:
    text = format_reassignment({("b", 0): (1,), ("a", 1): (3, 1), ("a", 0): (2, 3)})
    assert text == ('{"version":1,"partitions":['
                    '{"topic":"a","partition":0,"replicas":[2,3],"log_dirs":["any","any"]},'
                    '{"topic":"a","partition":1,"replicas":[3,1],"log_dirs":["any","any"]},'
                    '{"topic":"b","partition":0,"replicas":[1],"log_dirs":["any"]}]}')
    assert parse_reassignment(text) == {("a", 0): (2, 3), ("a", 1): (3, 1), ("b", 0): (1,)}


@pytest.mark.parametrize(("text", "message"), [
    ('{"version": 1, "partitions": [', "^The input string is not a valid JSON: "),
    ("[1, 2]", "^The input string is not a valid JSON"),
    (reassignment({"topic": "t", "partition": 0, "replicas": [1]}, version=2),
     "^Not supported version field value 2$"),
    (reassignment(), "^Partition reassignment list cannot be empty$"),
    (reassignment({"topic": "t", "partition": 0, "replicas": []}),
     "^Partition replica list cannot be empty$"),
    (reassignment({"topic": "t", "partition": 0, "replicas": [1, 2, 1]},
                  {"topic": "u", "partition": 3, "replicas": [4, 4]}),
     r"^Partition replica lists may not contain duplicate entries: t-0 contains multiple "
     r"entries for 1\. u-3 contains multiple entries for 4$"),
    (reassignment({"topic": "t", "partition": 0, "replicas": [1]},
                  {"topic": "t", "partition": 0, "replicas": [2]}),
     "^Partition reassignment contains duplicate topic partitions: t-0$"),
    (reassignment({"topic": "t", "partition": "0", "replicas": [1]}),
     'needs a string "topic", an integer "partition" and a list of integer "replicas"'),
    (reassignment({"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any"]}),
     r"^Size of replicas list \[1, 2\] is different from size of log dirs list \['any'\] "
     r"for partition t-0$"),
    (reassignment({"topic": "t", "partition": 0, "replicas": [1], "log_dirs": ["/d"]}),
     "moving a replica to a chosen log directory is not supported"),
])
def test_a_bad_reassignment_file_gets_one_line_saying_what_is_wrong(text: str,
                                                                     message: str) -> None:
    with pytest.raises(ReassignmentInputError, match=message) as caught:
        parse_reassignment(text)
    assert "\n" not in str(caught.value)


def test_topics_to_move_and_the_broker_list() -> None:
    assert parse_topics_to_move('{"version":1,"topics":[{"topic":"a"},{"topic":"b"}]}') == \
        ["a", "b"]
    assert parse_topics_to_move('{"topics":[{"topic":"a"}]}') == ["a"]  # version defaults to 1
    assert parse_broker_list("4,2,3") == [4, 2, 3]
    for text, message in [('{"version":1,"topics":[{"topic":"a"},{"topic":"a"}]}',
                           "duplicate entries: a$"),
                          ('{"version":3,"topics":[]}', "Not supported version field value 3"),
                          ("topics: a", "not a valid JSON"),
                          ('{"version":1,"topics":[]}', "is empty")]:
        with pytest.raises(ReassignmentInputError, match=message):
            parse_topics_to_move(text)
    with pytest.raises(ReassignmentInputError, match="Broker list contains duplicate entries: 2"):
        parse_broker_list("1,2,2")
    with pytest.raises(ReassignmentInputError, match="comma-separated broker ids"):
        parse_broker_list("1,two")


def options(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["reassign-partitions", "--bootstrap-server", "h:1",
                                      *argv])


def test_exactly_one_action_with_its_files() -> None:
    assert chosen_action(options("--list")) == "list"
    assert chosen_action(options("--verify", "--reassignment-json-file", "f")) == "verify"
    assert chosen_action(options("--generate", "--topics-to-move-json-file", "f",
                                 "--broker-list", "1,2")) == "generate"
    with pytest.raises(ReassignmentInputError, match="exactly one action"):
        chosen_action(options())
    with pytest.raises(ReassignmentInputError, match="exactly one action"):
        chosen_action(options("--list", "--verify"))
    with pytest.raises(ReassignmentInputError, match="--execute: --reassignment-json-file"):
        chosen_action(options("--execute"))
    with pytest.raises(ReassignmentInputError, match="--generate: --broker-list"):
        chosen_action(options("--generate", "--topics-to-move-json-file", "f"))
    with pytest.raises(ReassignmentInputError, match='"--throttle" can\'t be used with'):
        chosen_action(options("--verify", "--reassignment-json-file", "f",
                              "--throttle", "100"))


def test_the_proposal_spreads_replicas_and_leaders_over_the_broker_list() -> None:
    current = {("t", p): (1, 2, 3) for p in range(8)}
    brokers = plan.brokers_for_plan([1, 2, 3, 4], {1: None, 2: None, 3: None, 4: None}, True)
    proposed = plan.propose_assignment(current, brokers, random.Random(7))
    assert sorted(proposed) == sorted(current)
    assert all(len(set(r)) == 3 and set(r) <= {1, 2, 3, 4} for r in proposed.values())
    assert Counter(r[0] for r in proposed.values()) == {1: 2, 2: 2, 3: 2, 4: 2}
    assert Counter(b for r in proposed.values() for b in r) == {1: 6, 2: 6, 3: 6, 4: 6}


def test_the_proposal_keeps_each_topics_replication_factor_and_puts_copies_on_other_racks(
        ) -> None:
    current = {("a", 0): (1, 2), ("a", 1): (2, 3), ("b", 0): (1,), ("b", 1): (1,)}
    racks = {1: "r1", 2: "r1", 3: "r2", 4: "r2"}
    brokers = plan.brokers_for_plan([1, 2, 3, 4], racks, rack_aware=True)
    for seed in range(20):
        proposed = plan.propose_assignment(current, brokers, random.Random(seed))
        assert [len(proposed[tp]) for tp in sorted(current)] == [2, 2, 1, 1]
        assert all(racks[x] != racks[y] for x, y in (proposed[("a", 0)], proposed[("a", 1)]))


def test_the_broker_list_must_name_registered_brokers_with_consistent_racks() -> None:
    with pytest.raises(ReassignmentInputError, match="^Unknown broker id 5$"):
        plan.brokers_for_plan([1, 5], {1: None, 2: None}, True)
    with pytest.raises(ReassignmentInputError, match="Not all brokers have rack information"):
        plan.brokers_for_plan([1, 2], {1: "r1", 2: None}, True)
    assert plan.brokers_for_plan([1, 2], {1: "r1", 2: None}, rack_aware=False) == \
        [UsableBroker(1), UsableBroker(2)]
    with pytest.raises(ReassignmentInputError, match="topic t: .*replication factor of 3"):
        plan.propose_assignment({("t", 0): (1, 2, 3)}, [UsableBroker(1), UsableBroker(2)],
                                random.Random(0))


def test_throttles_cover_the_sources_the_new_replicas_and_every_broker_involved() -> None:
    moves = plan.proposed_moves(
        targets={("t", 0): (2, 3, 4), ("t", 1): (1, 2, 3), ("u", 0): (4,)},
        current={("t", 0): (1, 2, 3), ("t", 1): (1, 2, 3), ("u", 0): (5,)},
        ongoing={})
    assert plan.topic_throttles(moves) == {
        "t": {"leader.replication.throttled.replicas": "0:1,0:2,0:3,1:1,1:2,1:3",
              "follower.replication.throttled.replicas": "0:4"},
        "u": {"leader.replication.throttled.replicas": "0:5",
              "follower.replication.throttled.replicas": "0:4"}}
    assert plan.reassigning_brokers(moves) == [1, 2, 3, 4, 5]


def test_a_partition_already_moving_keeps_its_original_sources() -> None:
    # Replicas 1,2,3,4 while 4 is being added: the sources are 1,2,3, not 4.
    moves = plan.proposed_moves(targets={("t", 0): (2, 3, 5)},
                                current={("t", 0): (1, 2, 3, 4)},
                                ongoing={("t", 0): ((1, 2, 3, 4), (4,))})
    assert moves[("t", 0)] == plan.PartitionMove(frozenset({1, 2, 3}), frozenset({5}))
    with pytest.raises(ReassignmentInputError, match="Unable to find partition: t-9"):
        plan.proposed_moves({("t", 9): (1,)}, {}, {})


def test_verify_prints_each_partitions_state_as_kafka_does() -> None:
    lines = plan.verify_lines(
        targets={("t", 0): (2, 3, 4), ("t", 1): (2, 3, 4), ("t", 2): (4,), ("gone", 0): (1,)},
        ongoing=[("t", 1)],
        current={("t", 0): (2, 3, 4), ("t", 1): (1, 2, 3, 4), ("t", 2): (1,)})
    assert lines == [
        "Status of partition reassignment:",
        "There is no active reassignment of partition gone-0, but replica set is  rather "
        "than 1.",
        "Reassignment of partition t-0 is completed.",
        "Reassignment of partition t-1 is still in progress.",
        "There is no active reassignment of partition t-2, but replica set is 1 rather than 4.",
    ]
    assert plan.clearing_lines([3, 1, 2], ["t"]) == [
        "Clearing broker-level throttles on brokers 1,2,3",
        "Clearing topic-level throttles on topic t",
        "Throttle was removed."]


def test_list_and_cancel_follow_kafkas_tool() -> None:
    assert plan.list_lines({}) == ["No partition reassignments found."]
    assert plan.list_lines({("t", 1): ((1, 2, 3, 4), (4,), (1,)), ("t", 0): ((2, 3), (), ())}) \
        == ["Current partition reassignments:", "t-0: replicas: 2,3.",
            "t-1: replicas: 1,2,3,4. adding: 4. removing: 1."]
    ongoing = {("t", 0): ((4,), (1,)), ("t", 1): ((4,), ()), ("t", 2): ((), (3,)),
               ("u", 0): ((5,), (1,))}
    assert plan.cancellable(ongoing, [("t", 0), ("t", 1), ("t", 2)]) == [("t", 0), ("t", 2)]
