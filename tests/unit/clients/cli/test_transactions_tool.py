"""`raftka transactions`' pure parts: Kafka's table layout and the `--list` spellings."""

from __future__ import annotations

from broker.cli.main import build_parser, normalized_argv
from clients.cli.transactions import LIST_HEADER, format_table


def test_tables_pad_each_column_to_its_widest_cell_and_end_it_with_a_tab() -> None:
    text = format_table(LIST_HEADER, [("a-long-transactional-id", "1", "1000", "Ongoing")])
    header, row = text.split("\n")
    assert header == ("TransactionalId        \tCoordinator\tProducerId\t"
                      "TransactionState\t")
    assert row == "a-long-transactional-id\t1          \t1000      \tOngoing         \t"
    assert [c.strip() for c in row.rstrip("\t").split("\t")] == [
        "a-long-transactional-id", "1", "1000", "Ongoing"]


def test_option_spellings_of_subcommands_and_options_on_either_side() -> None:
    parser = build_parser()
    for argv in (["transactions", "--bootstrap-server", "b:1", "--list"],
                 ["transactions", "--bootstrap-server", "b:1", "list"],
                 ["transactions", "list", "--bootstrap-server", "b:1"]):
        args = parser.parse_args(normalized_argv(argv))
        assert (args.subcommand, args.bootstrap_server, args.timeout) == ("list", "b:1", 30.0)
    args = parser.parse_args(normalized_argv(
        ["transactions", "--bootstrap-server", "b:1", "--describe", "--transactional-id", "x"]))
    assert (args.subcommand, args.transactional_id) == ("describe", "x")
    # Only the first option naming a subcommand after `transactions` is rewritten.
    assert normalized_argv(["groups", "--list"]) == ["groups", "--list"]


class FakeAdmin:
    """What find-hanging asks of the admin client, answered from fixed state."""

    def __init__(self, producers: dict, listed: list, described: dict) -> None:
        self.producers, self.listed, self.described = producers, listed, described

    def partitions_on_broker(self, broker_id: int) -> list:
        return sorted(self.producers)

    def describe_producers(self, partitions: list, broker_id: int | None = None) -> dict:
        return {tp: self.producers[tp] for tp in partitions}

    def list_transactions(self, producer_id_filters: list = ()) -> list:
        return [t for t in self.listed if t.producer_id in producer_id_filters]

    def describe_transactions(self, ids: list) -> dict:
        return {i: self.described[i] for i in ids}


def test_find_hanging_reports_open_transactions_their_coordinator_does_not_drive() -> None:
    import argparse
    import time

    from clients.cli.transactions import _find_hanging
    from clients.admin.transaction_operations import (
        ProducerState,
        TransactionDescription,
        TransactionListing,
    )

    old = int(time.time() * 1000) - 30 * 60_000
    producers = {
        ("t", 0): [ProducerState(1, 0, 5, old, 3, 10),      # no coordinator knows it
                   ProducerState(2, 0, 5, old, 3, 20),      # ongoing there: not hanging
                   ProducerState(4, 0, 5, old, -1, -1)],    # no open transaction
        ("t", 1): [ProducerState(3, 0, 5, old, 3, 7),       # its transaction left t-1
                   ProducerState(5, 0, 5, int(time.time() * 1000), 3, 9)],  # too recent
    }
    listed = [TransactionListing("two", 2, "Ongoing", 1),
              TransactionListing("three", 3, "Ongoing", 1)]
    described = {"two": TransactionDescription("two", 1, "Ongoing", 2, 0, 60000, old,
                                               (("t", 0),)),
                 "three": TransactionDescription("three", 1, "Ongoing", 3, 0, 60000, old,
                                                 (("t", 0),))}
    args = argparse.Namespace(broker_id=1, topic=None, partition=None,
                              max_transaction_timeout=15)
    rows = [line.rstrip("\t").split("\t")
            for line in _find_hanging(FakeAdmin(producers, listed, described),
                                      args).splitlines()]
    assert [[c.strip() for c in r[:6]] for r in rows[1:]] == [
        ["t", "0", "1", "0", "3", "10"], ["t", "1", "3", "0", "3", "7"]]
    assert all(int(r[7]) >= 29 for r in rows[1:])


def test_find_hanging_counts_a_forgotten_transactional_id_and_fails_on_other_errors() -> None:
    import argparse
    import time

    import pytest

    from clients.cli.main import CommandError
    from clients.cli.transactions import _find_hanging
    from clients.admin.transaction_operations import ProducerState, TransactionListing
    from clients.protocol import ErrorCode, KafkaError

    old = int(time.time() * 1000) - 3 * 60_000
    producers = {("t", 0): [ProducerState(1, 0, 5, old, 3, 10)]}
    listed = [TransactionListing("one", 1, "Ongoing", 1)]
    args = argparse.Namespace(broker_id=None, topic="t", partition=0,
                              max_transaction_timeout=1)
    forgotten = {"one": KafkaError(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)}
    rows = _find_hanging(FakeAdmin(producers, listed, forgotten), args).splitlines()
    assert [c.strip() for c in rows[1].split("\t")[:6]] == ["t", "0", "1", "0", "3", "10"]
    unavailable = {"one": KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)}
    with pytest.raises(CommandError, match="'one'"):
        _find_hanging(FakeAdmin(producers, listed, unavailable), args)
    # Not older than the limit: no candidate, nothing asked of the coordinators.
    recent = argparse.Namespace(broker_id=None, topic="t", partition=0,
                                max_transaction_timeout=5)
    assert len(_find_hanging(FakeAdmin(producers, listed, unavailable),
                             recent).splitlines()) == 1


def test_find_hanging_needs_a_topic_or_a_broker_and_a_partition_needs_its_topic() -> None:
    import argparse

    import pytest

    from clients.cli.main import CommandError
    from clients.cli.transactions import _find_hanging

    admin = FakeAdmin({}, [], {})
    with pytest.raises(CommandError, match="either --topic or --broker-id"):
        _find_hanging(admin, argparse.Namespace(broker_id=None, topic=None, partition=None,
                                                max_transaction_timeout=15))
    with pytest.raises(CommandError, match="--partition requires --topic"):
        _find_hanging(admin, argparse.Namespace(broker_id=1, topic=None, partition=0,
                                                max_transaction_timeout=15))
