"""What the admin-client commands share: the client's settings from the command line and
`--command-config`, and one error line on stderr with exit 1 instead of a traceback."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

# A command's result: stdout lines, or stdout lines and an exit code.
Outcome = list[str] | tuple[list[str], int]


# Kafka's default.api.timeout.ms: how long an admin call retries retriable errors.
DEFAULT_API_TIMEOUT_MS = 60_000


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    """`--bootstrap-server` (required), `--command-config` and `--timeout-ms`, as Kafka's
    admin tools."""
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    add_command_config(parser)
    add_timeout_option(parser)


def add_timeout_option(parser: argparse.ArgumentParser) -> None:
    """`--timeout-ms`: how long each admin call retries retriable errors (a moved
    controller or coordinator, a broker that is not reachable) before the command fails."""
    parser.add_argument("--timeout-ms", dest="api_timeout_ms", type=int,
                        default=DEFAULT_API_TIMEOUT_MS, metavar="MS",
                        help="retry retriable errors of each admin call for this long "
                             f"(default.api.timeout.ms, default {DEFAULT_API_TIMEOUT_MS})")


def api_timeout_ms(args: argparse.Namespace) -> int:
    """The `--timeout-ms` given (a CommandError if negative), or Kafka's default."""
    value = getattr(args, "api_timeout_ms", None)
    if value is None:
        return DEFAULT_API_TIMEOUT_MS
    if value < 0:
        from clients.cli.main import CommandError
        raise CommandError(f"--timeout-ms must be at least 0, not {value}")
    return int(value)


class ConfigFileAction(argparse.Action):
    """Stores a properties file's path and the option that named it, so an error about
    the file names the option the user typed (`--producer.config`, `--admin.config`)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_option", option_string)


def add_command_config(parser: argparse.ArgumentParser, *aliases: str) -> None:
    """`--command-config FILE`: client settings (security.protocol, ssl.*, ...) as Kafka's
    tools take them; `aliases` are a tool's older names for the same option."""
    parser.add_argument("--command-config", *aliases, dest="command_config", metavar="FILE",
                        action=ConfigFileAction,
                        help="a properties file of client settings (security.protocol, "
                             "ssl.*, ...)")


def command_config(args: argparse.Namespace) -> dict[str, str]:
    """The `--command-config` file's properties (none without the option); see
    `read_config_file`."""
    path = getattr(args, "command_config", None)
    if not path:
        return {}
    return read_config_file(path, getattr(args, "command_config_option", None)
                            or "--command-config")


def read_config_file(path: str, option: str) -> dict[str, str]:
    """The properties of the file `option` names; a file that is missing, unreadable, not
    UTF-8 or not valid syntax is a CommandError naming the option and the file."""
    from clients.cli.main import CommandError
    from clients.common.properties import load_properties
    from clients.common.properties import PropertiesSyntaxError

    try:
        return load_properties(path)
    except OSError as exc:
        raise CommandError(f"{option}: cannot read {path}: {exc.strerror or exc}") from None
    except PropertiesSyntaxError as exc:
        raise CommandError(f"{option}: {path}: {exc}") from None


def admin_config(args: argparse.Namespace, client_id: str) -> dict[str, str]:
    """`--command-config` properties, then `--bootstrap-server` and `--timeout-ms`;
    `client_id` unless set."""
    config: dict[str, str] = command_config(args)
    config["bootstrap.servers"] = args.bootstrap_server
    config["default.api.timeout.ms"] = str(api_timeout_ms(args))
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
