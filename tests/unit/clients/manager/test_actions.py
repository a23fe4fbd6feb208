"""The console's action forms: parsing, checking and the CSRF token."""

from __future__ import annotations

import pytest

from clients.manager.actions import ActionError, describe, parse_configs, parse_form
from clients.manager.actions import token_matches


def test_forms_parse_and_the_token_must_match() -> None:
    form = parse_form(b"topic=a%2Bb&csrf=t0k&csrf=t0k2&empty=")
    assert form == {"topic": "a+b", "csrf": "t0k2", "empty": ""}
    assert token_matches(form, "t0k2")
    assert not token_matches(form, "t0k")
    assert not token_matches({}, "t0k")


def test_create_topic_is_checked_and_summarised() -> None:
    action = describe("create-topic", {"topic": " t ", "partitions": "3",
                                       "replication_factor": "2",
                                       "configs": "retention.ms=1\n\ncleanup.policy=compact"})
    assert action.summary == ("Create topic t with 3 partitions, replication factor 2, "
                              "configs: cleanup.policy=compact, retention.ms=1")
    assert action.fields["topic"] == "t"
    for bad in ({"topic": "", "partitions": "1", "replication_factor": "1"},
                {"topic": "t", "partitions": "x", "replication_factor": "1"},
                {"topic": "t", "partitions": "0", "replication_factor": "1"},
                {"topic": "t", "partitions": "1", "replication_factor": "1",
                 "configs": "novalue"}):
        with pytest.raises(ActionError):
            describe("create-topic", bad)


def test_counts_beyond_their_wire_fields_are_refused_on_the_form() -> None:
    with pytest.raises(ActionError, match="partitions must be at most 2147483647"):
        describe("create-topic", {"topic": "t", "partitions": "100000000000",
                                  "replication_factor": "1"})
    with pytest.raises(ActionError, match="replication_factor must be at most 32767"):
        describe("create-topic", {"topic": "t", "partitions": "1",
                                  "replication_factor": "40000"})
    with pytest.raises(ActionError, match="partitions must be at most 2147483647"):
        describe("add-partitions", {"topic": "t", "partitions": "2147483648"})
    # Within the fields, the broker decides (more than 10,000 partitions: POLICY_VIOLATION).
    assert describe("create-topic", {"topic": "t", "partitions": "100000000",
                                     "replication_factor": "1"}).fields["partitions"] == (
        "100000000")


def test_add_partitions_and_unknown_actions() -> None:
    assert describe("add-partitions", {"topic": "t", "partitions": "5"}).summary == (
        "Raise topic t to 5 partitions")
    with pytest.raises(ActionError, match="unknown action"):
        describe("delete-everything", {})


def test_config_lines() -> None:
    assert parse_configs("a=1\n b = 2 \n\n") == {"a": "1", "b": "2"}
    with pytest.raises(ActionError, match="KEY=VALUE"):
        parse_configs("=1")


def test_topic_actions_say_what_they_will_do() -> None:
    from clients.manager.actions import parse_headers

    assert describe("edit-configs", {"topic": "t", "set": "retention.ms=5",
                                     "delete": "cleanup.policy, "}).summary == (
        "On topic t: set retention.ms=5, delete cleanup.policy (back to its default)")
    with pytest.raises(ActionError, match="nothing to change"):
        describe("edit-configs", {"topic": "t", "set": "", "delete": ""})
    assert describe("delete-topic", {"topic": "t"}).summary == (
        "Delete topic t and all its records")
    assert describe("elect-leaders", {"topic": "t"}).fields == {"topic": "t"}
    produce = describe("produce", {"topic": "t", "partition": "", "key": "k", "value": "v",
                                   "headers": "a=1\nb=2"})
    assert produce.summary == ("Produce one record to topic t (the partition its key picks): "
                               "key 'k', value 'v', 2 headers")
    with pytest.raises(ActionError, match="partition must be"):
        describe("produce", {"topic": "t", "partition": "x"})
    assert parse_headers("a=1\n\na=x=y") == [("a", b"1"), ("a", b"x=y")]
    with pytest.raises(ActionError, match="header line"):
        parse_headers("novalue")


def test_group_actions_and_reset_offsets() -> None:
    from clients.manager.actions import decode_offsets, describe_reset, encode_offsets

    assert describe("delete-group", {"group": "g"}).summary == (
        "Delete group g and its committed offsets")
    offsets = {("a.b-c", 0): 5, ("a.b-c", 1): 0}
    assert decode_offsets(encode_offsets(offsets)) == offsets
    for bad in ("", "t:0", "t:x:1", ":0:1"):
        with pytest.raises(ActionError):
            decode_offsets(bad)
    action = describe_reset({"group": "g", "to": "timestamp", "value": "1700", "topic": ""},
                            {("t", 0): 9}, {("t", 0): 4, ("t", 1): 0})
    assert action.summary == ("Reset group g's offsets on every partition it has committed "
                              "to timestamp 1700")
    assert action.rows == [("t", "0", "9", "4"), ("t", "1", "-", "0")]
    assert action.back == "/groups/g"
    with pytest.raises(ActionError, match="to must be one of"):
        describe_reset({"group": "g", "to": "yesterday"}, {}, {})
    with pytest.raises(ActionError, match="value must be"):
        describe_reset({"group": "g", "to": "offset", "value": ""}, {}, {})
