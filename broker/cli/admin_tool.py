"""What the admin-client commands share: the client's settings from the command line and
`--command-config`, and one error line on stderr with exit 1 instead of a traceback."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

# A command's result: stdout lines, or stdout lines and an exit code.
Outcome = list[str] | tuple[list[str], int]


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    """`--bootstrap-server` (required) and `--command-config`, as Kafka's admin tools."""
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    parser.add_argument("--command-config", metavar="FILE",
                        help="a properties file of admin client settings")


def admin_config(args: argparse.Namespace, client_id: str) -> dict[str, str]:
    """`--command-config` properties, then `--bootstrap-server`; `client_id` unless set."""
    config: dict[str, str] = {}
    if args.command_config:
        from broker.config import load_properties
        config.update(load_properties(args.command_config))
    config["bootstrap.servers"] = args.bootstrap_server
    config.setdefault("client.id", client_id)
    return config


def run_admin_tool(args: argparse.Namespace, client_id: str,
                   execute: Callable[[argparse.Namespace, Any], Outcome], error_prefix: str,
                   broker_error: Callable[[Any], str] = lambda exc: exc.message) -> int:
    """Run `execute(args, admin)` with a blocking admin client and print its lines; a bad
    argument, an unreachable cluster or a broker's error prints `error_prefix` and one line
    on stderr and exits 1."""
    from clients.admin import BlockingAdmin, ConfigError
    from clients.net import KafkaConnectionError
    from clients.protocol import KafkaError, ProtocolError

    try:
        with BlockingAdmin(admin_config(args, client_id)) as admin:
            outcome = execute(args, admin)
    except KafkaError as exc:
        print(error_prefix + broker_error(exc), file=sys.stderr)
        return 1
    except (ValueError, ConfigError, KafkaConnectionError, ProtocolError, OSError) as exc:
        print(error_prefix + str(exc), file=sys.stderr)
        return 1
    lines, code = outcome if isinstance(outcome, tuple) else (outcome, 0)
    if lines:
        print("\n".join(lines))
    return code
