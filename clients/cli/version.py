"""`raftka version`: print the installed version."""

from __future__ import annotations

import argparse
from importlib.metadata import PackageNotFoundError, version


def raftka_version() -> str:
    try:
        return version("raftka")
    except PackageNotFoundError:
        return "0+unknown"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("version", help="print the Raftka version")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print(raftka_version())
    return 0
