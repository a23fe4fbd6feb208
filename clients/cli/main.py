"""The `raftka` command line: one subcommand per module, each registering itself.

These are the admin commands, which use only the clients. The installed `raftka`
(`broker.cli.main`) runs them with the node's own commands added, whose modules it names:
clients import nothing of broker, metadata or kraft."""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from typing import NoReturn, Sequence

from clients.cli.errors import LOG_LEVELS, configure_logging, one_line, root_cause

# Each module exposes `register(subparsers)` and sets `func` on its parser(s). Modules import
# their heavy dependencies inside the command function so `raftka --help` stays fast.
COMMAND_MODULES = (
    "clients.cli.version",
    "clients.cli.quorum",
    "clients.cli.topics",
    "clients.cli.get_offsets",
    "clients.cli.delete_records",
    "clients.cli.console_producer",
    "clients.cli.console_consumer",
    "clients.cli.producer_perf",
    "clients.cli.consumer_perf",
    "clients.cli.api_versions",
    "clients.cli.groups",
    "clients.cli.transactions",
    "clients.cli.acls",
    "clients.cli.configs",
    "clients.cli.manager",
    "clients.cli.leader_election",
    "clients.cli.log_dirs",
    "clients.cli.cluster",
)


class CommandError(Exception):
    """A command failed in a way the user should read; printed without a traceback."""


class OneLineParser(argparse.ArgumentParser):
    """Usage errors in one line, like every other error (subcommand parsers inherit it)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def positive_int(text: str) -> int:
    """An argparse type: an integer above zero (a count, a number of rounds)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}")
    return value


def build_parser(modules: Sequence[str] = COMMAND_MODULES) -> argparse.ArgumentParser:
    """The parser of the commands in `modules` (module names, in the order of `--help`)."""
    parser = OneLineParser(
        prog="raftka",
        description="Raftka: a Kafka-compatible broker with a Raft metadata quorum.",
    )
    parser.add_argument("--log-level", dest="cli_log_level", type=str.upper,
                        choices=LOG_LEVELS, metavar="LEVEL",
                        help="log the client libraries at LEVEL (DEBUG also prints the "
                             "traceback of an error)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in modules:
        importlib.import_module(name).register(subparsers)
    return parser


def normalized_argv(argv: Sequence[str], modules: Sequence[str] = COMMAND_MODULES) -> list[str]:
    """The arguments after each command module's optional ``normalize_argv`` (spellings a
    command accepts besides argparse's own)."""
    out = list(argv)
    for name in modules:
        normalize = getattr(importlib.import_module(name), "normalize_argv", None)
        if normalize is not None:
            out = normalize(out)
    return out


def main(argv: Sequence[str] | None = None, modules: Sequence[str] = COMMAND_MODULES) -> int:
    """Run the command `argv` names (default: the process's arguments) among `modules`."""
    parser = build_parser(modules)
    args = parser.parse_args(normalized_argv(sys.argv[1:] if argv is None else argv, modules))
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    if args.cli_log_level is not None:
        configure_logging(args.cli_log_level)
    try:
        return int(func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except SystemExit:
        raise
    except BaseException as exc:  # the one boundary: every command's error becomes one line
        cause = root_cause(exc)
        if isinstance(cause, KeyboardInterrupt):
            return 130
        if args.cli_log_level == "DEBUG" or getattr(args, "log_level", None) == "DEBUG":
            traceback.print_exception(exc)
        print(f"raftka {args.command}: {one_line(cause)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    # Run through the package module, so `python -m` shares one CommandError class with the
    # subcommands instead of a second copy of this module.
    from clients.cli.main import main as _package_main

    sys.exit(_package_main())
