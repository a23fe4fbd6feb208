"""`raftka server start CONFIG`: run one node until SIGTERM/SIGINT, then stop gracefully."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING, Awaitable, Callable

from clients.cli.errors import configure_logging
from clients.cli.main import CommandError

if TYPE_CHECKING:
    import trio

    from broker.config import ServerConfig

logger = logging.getLogger(__name__)

# node_main(config, shutdown): run the node; return once `shutdown` is set and it has stopped.
NodeMain = Callable[["ServerConfig", "trio.Event"], Awaitable[None]]


def register(subparsers: argparse._SubParsersAction) -> None:
    server = subparsers.add_parser("server", help="run a node")
    commands = server.add_subparsers(dest="server_command", metavar="SUBCOMMAND")
    server.set_defaults(func=lambda args: server.print_help() or 2)
    start = commands.add_parser("start", help="start a node from a .properties file")
    start.add_argument("config", help="the server .properties file")
    start.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                       help="override one config value (repeatable)")
    start.add_argument("--log-level", default="INFO",
                       choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    start.set_defaults(func=run_start)


def parse_overrides(items: list[str]) -> dict[str, str]:
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CommandError(f"--override {item!r}: expected KEY=VALUE")
        overrides[key.strip()] = value
    return overrides


def check_storage(config: "ServerConfig", config_path: str) -> str:
    """Every data dir is formatted for this node and one cluster; returns the cluster id."""
    from broker.log.checkpoints import read_meta_properties

    cluster_ids = set()
    for directory in config.all_data_dirs:
        try:
            meta = read_meta_properties(directory)
        except OSError as exc:
            raise CommandError(f"cannot read {directory}: {exc}") from None
        if meta is None:
            raise CommandError(f"log directory {directory} is not formatted; run `raftka "
                               f"storage format -t <cluster id> -c {config_path}` first")
        if meta.get("node.id") != str(config.node_id):
            raise CommandError(f"log directory {directory} belongs to node "
                               f"{meta.get('node.id')}, not node.id {config.node_id}")
        cluster_ids.add(meta.get("cluster.id"))
    if len(cluster_ids) != 1:
        raise CommandError(f"log directories disagree on the cluster id: "
                           f"{', '.join(sorted(str(c) for c in cluster_ids))}")
    cluster_id = cluster_ids.pop()
    if config.cluster_id is not None and config.cluster_id != cluster_id:
        raise CommandError(f"cluster.id {config.cluster_id} does not match the formatted "
                           f"cluster id {cluster_id}")
    return str(cluster_id)


async def run_until_signalled(node_main: NodeMain, config: "ServerConfig") -> None:
    """Run the node; the first SIGTERM/SIGINT asks for a graceful stop bounded by
    `raftka.shutdown.timeout.ms`, a second one ends the process at once (see
    `broker.cli.stop_signals`)."""
    import trio

    from broker.cli.stop_signals import StopSignals

    shutdown = trio.Event()
    token = trio.lowlevel.current_trio_token()
    signals = StopSignals(lambda: token.run_sync_soon(shutdown.set),
                          config.network_limits.shutdown_timeout_ms / 1000)
    signals.install()
    try:
        await node_main(config, shutdown)
    finally:
        signals.uninstall()


def run_start(args: argparse.Namespace) -> int:
    from broker.config import ConfigError, ServerConfig

    configure_logging(args.log_level)
    try:
        config = ServerConfig.from_file(args.config, parse_overrides(args.override))
    except ConfigError as exc:
        raise CommandError(str(exc)) from None
    cluster_id = check_storage(config, args.config)
    from broker.node import node_main
    from broker.open_files import raise_open_files_limit

    raise_open_files_limit()

    logger.info("starting node %d (%s) of cluster %s", config.node_id,
                ",".join(sorted(config.process_roles)), cluster_id)
    import trio

    from broker.node import NodeStartupError
    from kraft.errors import QuorumConfigError

    startup_errors = (OSError, NodeStartupError, QuorumConfigError)
    try:
        trio.run(run_until_signalled, node_main, config)
    except (*startup_errors, BaseExceptionGroup) as exc:
        # A listener that cannot bind (port in use), a quorum that refuses its config or a
        # registration that never completes is the user's to read, without a traceback.
        found = _first_error(exc, startup_errors)
        if found is None:
            raise
        raise CommandError(str(found)) from None
    logger.info("node %d stopped", config.node_id)
    return 0


def _first_error(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> BaseException | None:
    """The first exception of `kinds` in `exc`, looking inside exception groups."""
    if isinstance(exc, kinds):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _first_error(inner, kinds)
            if found is not None:
                return found
    return None
