"""`raftka transactions`' pure parts: Kafka's table layout and the `--list` spellings."""

from __future__ import annotations

from broker.cli.main import build_parser, normalized_argv
from broker.cli.transactions import LIST_HEADER, format_table


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
