"""The `raftka` command as installed: the admin commands of `clients.cli` and the commands
that need the node's own code, which live here because clients import nothing of broker,
metadata or kraft. `server` runs a node and `storage` formats and inspects its log
directories (the server config, meta.properties, the bootstrap records); `dump-log` reads
segment and transaction index files (broker.log); `reassign-partitions` plans new assignments
with the controller's own replica placement (metadata.placement). `chaos` drives a cluster
under faults from outside it (cluster.chaos.command, over the launcher); `raftka` loads it
by name like every command module, and no module of broker imports the cluster package."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from clients.cli import main as admin_cli

# The order of `raftka --help`: version, the node's commands, the admin commands, then
# chaos and reassign-partitions.
COMMAND_MODULES = (
    admin_cli.COMMAND_MODULES[0],
    "broker.cli.storage",
    "broker.cli.server",
    "broker.cli.dump_log",
    *admin_cli.COMMAND_MODULES[1:],
    "cluster.chaos.command",
    "broker.cli.reassign_partitions",
)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every `raftka` command."""
    return admin_cli.build_parser(COMMAND_MODULES)


def normalized_argv(argv: Sequence[str]) -> list[str]:
    """`argv` with each command's own spellings normalized (see `clients.cli.main`)."""
    return admin_cli.normalized_argv(argv, COMMAND_MODULES)


def main(argv: Sequence[str] | None = None) -> int:
    """The console script `raftka`: run the command `argv` names."""
    return admin_cli.main(argv, COMMAND_MODULES)


if __name__ == "__main__":
    sys.exit(main())
