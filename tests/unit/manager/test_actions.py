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


def test_add_partitions_and_unknown_actions() -> None:
    assert describe("add-partitions", {"topic": "t", "partitions": "5"}).summary == (
        "Raise topic t to 5 partitions")
    with pytest.raises(ActionError, match="unknown action"):
        describe("delete-everything", {})


def test_config_lines() -> None:
    assert parse_configs("a=1\n b = 2 \n\n") == {"a": "1", "b": "2"}
    with pytest.raises(ActionError, match="KEY=VALUE"):
        parse_configs("=1")
