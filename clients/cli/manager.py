"""`raftka manager`: the web console (clients/manager) over a cluster."""

from __future__ import annotations

import argparse
import sys

from clients.cli.admin_tool import add_connection_options, admin_config
from clients.cli.main import CommandError

DEFAULT_LISTEN = "127.0.0.1:8080"
DEFAULT_REFRESH_S = 5
DEFAULT_LAG_INTERVAL_S = 10
DEFAULT_THROUGHPUT_INTERVAL_S = 10
DEFAULT_PAGE_TIMEOUT_S = 5


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("manager", help="run the cluster manager web console")
    add_connection_options(parser)
    parser.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                        help=f"address to serve on (default {DEFAULT_LISTEN}; beyond "
                             "loopback needs --password-file or --certfile/--keyfile)")
    parser.add_argument("--password-file", metavar="FILE",
                        help="USER:PASSWORD lines; every page then asks for HTTP basic auth")
    parser.add_argument("--certfile", metavar="FILE",
                        help="PEM certificate (chain) to serve HTTPS with; needs --keyfile")
    parser.add_argument("--keyfile", metavar="FILE",
                        help="PEM unencrypted private key of --certfile")
    parser.add_argument("--refresh", type=int, default=DEFAULT_REFRESH_S, metavar="SECONDS",
                        help=f"how often the overview pages reload (default "
                             f"{DEFAULT_REFRESH_S})")
    parser.add_argument("--lag-interval", type=int, default=DEFAULT_LAG_INTERVAL_S,
                        metavar="SECONDS",
                        help=f"how often the groups' lag is sampled for the lag charts "
                             f"(default {DEFAULT_LAG_INTERVAL_S})")
    parser.add_argument("--metrics-endpoint", action="append", default=[],
                        metavar="BROKER_ID=URL",
                        help="a broker's Prometheus metrics URL (repeat per broker); the "
                             "throughput charts then show bytes in and out, else messages "
                             "from offsets")
    parser.add_argument("--throughput-interval", type=int,
                        default=DEFAULT_THROUGHPUT_INTERVAL_S, metavar="SECONDS",
                        help=f"how often traffic is sampled for the throughput charts "
                             f"(default {DEFAULT_THROUGHPUT_INTERVAL_S})")
    parser.add_argument("--page-timeout", type=int, default=DEFAULT_PAGE_TIMEOUT_S,
                        metavar="SECONDS",
                        help=f"every page answers within this, showing what could be read "
                             f"and naming what could not (default {DEFAULT_PAGE_TIMEOUT_S})")
    parser.set_defaults(func=run_manager_command)


def run_manager_command(args: argparse.Namespace) -> int:
    from clients.admin import AdminConfig, ConfigError
    from clients.manager.app import ManagerSettings
    from clients.manager.auth import read_password_file
    from clients.manager.bind import (ManagerConfigError, check_bind, parse_listen,
                                      parse_metrics_endpoints)
    from clients.manager.server import open_listener, run_manager
    from clients.manager.tls import console_tls

    try:
        host, port = parse_listen(args.listen)
        tls = console_tls(args.certfile, args.keyfile)
        check_bind(host, args.password_file, tls is not None)
        users = read_password_file(args.password_file) if args.password_file else None
        endpoints = parse_metrics_endpoints(args.metrics_endpoint)
    except ManagerConfigError as exc:
        raise CommandError(str(exc)) from None
    for name in ("refresh", "lag_interval", "throughput_interval", "page_timeout"):
        if getattr(args, name) < 1:
            raise CommandError(f"--{name.replace('_', '-')} must be at least 1 second")
    config = admin_config(args, "raftka-manager")
    try:
        AdminConfig.from_mapping(config)
    except ConfigError as exc:
        raise CommandError(str(exc)) from None
    try:
        listener = open_listener(host, port)
    except ManagerConfigError as exc:
        raise CommandError(str(exc)) from None
    scheme = "https" if tls is not None else "http"
    bound = listener.getsockname()[1]
    shown = f"[{host}]:{bound}" if ":" in host else f"{host}:{bound}"
    print(f"raftka manager on {scheme}://{shown}/", file=sys.stderr, flush=True)
    run_manager(listener, ManagerSettings(
        config, args.refresh, users=users, lag_interval_s=args.lag_interval,
        metrics_endpoints=endpoints, throughput_interval_s=args.throughput_interval,
        page_timeout_s=args.page_timeout), tls)
    return 0
