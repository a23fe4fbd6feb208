"""The `raftka` command: one subcommand per module, each registering itself."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

# Each module exposes `register(subparsers)` and sets `func` on its parser(s). Modules import
# their heavy dependencies inside the command function so `raftka --help` stays fast.
COMMAND_MODULES = (
    "broker.cli.version",
    "broker.cli.storage",
    "broker.cli.server",
    "broker.cli.dump_log",
    "broker.cli.quorum",
    "broker.cli.topics",
    "broker.cli.get_offsets",
    "broker.cli.delete_records",
    "broker.cli.console_producer",
    "broker.cli.console_consumer",
    "broker.cli.api_versions",
    "broker.cli.groups",
)


class CommandError(Exception):
    """A command failed in a way the user should read; printed without a traceback."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="raftka",
        description="Raftka: a Kafka-compatible broker with a Raft metadata quorum.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except CommandError as exc:
        print(f"raftka {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    # Run through the package module, so `python -m` shares one CommandError class with the
    # subcommands instead of a second copy of this module.
    from broker.cli.main import main as _package_main

    sys.exit(_package_main())
