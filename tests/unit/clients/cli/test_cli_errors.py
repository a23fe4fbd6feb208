"""The `raftka` error boundary: exception groups become the one line of their cause."""

from __future__ import annotations

import pytest

from clients.cli import main as cli
from clients.cli.errors import one_line, root_cause
from clients.protocol import ErrorCode, KafkaError


class Cancelled(Exception):
    """Stands for trio.Cancelled, which accompanies the real error in a nursery's group."""


def test_the_cause_inside_nested_groups_is_reported() -> None:
    cause = KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "topic 't': gone")
    group = ExceptionGroup("outer", [Cancelled(), ExceptionGroup("inner", [cause])])
    assert root_cause(group) is cause
    assert one_line(cause) == "UNKNOWN_TOPIC_OR_PARTITION (3): topic 't': gone"


def test_an_unexpected_error_names_its_type_and_the_way_to_the_traceback() -> None:
    assert one_line(RuntimeError("x\ny")) == (
        "RuntimeError: x y (run with --log-level DEBUG for the traceback)")


def test_a_group_raised_by_a_command_is_one_line_and_exit_1(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def failing(args: object) -> int:
        raise ExceptionGroup("nursery", [OSError("disk on fire")])

    parser = cli.build_parser()
    args = parser.parse_args(["version"])
    args.func = failing
    monkeypatch.setattr(cli, "build_parser", lambda modules: _FixedParser(parser, args))
    assert cli.main(["version"]) == 1
    assert capsys.readouterr().err == "raftka version: disk on fire\n"


def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["console-consumer", "--topic", "t", "--bootstrap-server", "h:1",
                  "--max-messages", "many"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "raftka console-consumer: argument --max-messages: invalid int value: 'many' "
        "(see raftka console-consumer --help)\n")


class _FixedParser:
    def __init__(self, parser: object, args: object) -> None:
        self._parser, self._args = parser, args

    def parse_args(self, argv: object) -> object:
        return self._args

    def print_help(self) -> None:
        pass
