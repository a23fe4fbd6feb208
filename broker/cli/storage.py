"""`raftka storage random-uuid`, `format` and `info`: Kafka's kafka-storage tool."""

from __future__ import annotations

import argparse
from pathlib import Path

from clients.cli.main import CommandError


def register(subparsers: argparse._SubParsersAction) -> None:
    storage = subparsers.add_parser("storage", help="prepare log directories")
    commands = storage.add_subparsers(dest="storage_command", metavar="SUBCOMMAND")
    storage.set_defaults(func=lambda args: storage.print_help() or 2)

    random_uuid = commands.add_parser("random-uuid", help="print a new random cluster id")
    random_uuid.set_defaults(func=run_random_uuid)

    fmt = commands.add_parser("format", help="write meta.properties into every log directory")
    fmt.add_argument("-t", "--cluster-id", required=True, help="the cluster id (base64url UUID)")
    fmt.add_argument("-c", "--config", required=True, help="the server .properties file")
    fmt.add_argument("-g", "--ignore-formatted", action="store_true",
                     help="skip directories already formatted with these ids")
    fmt.add_argument("-S", "--add-scram", action="append", default=[], metavar="CREDENTIAL",
                     help="a SCRAM credential for the first start, e.g. "
                          "'SCRAM-SHA-256=[name=alice,password=alice-secret]' (repeatable)")
    fmt.set_defaults(func=run_format)

    info = commands.add_parser("info", help="print what `storage format` wrote into each "
                                            "log directory (like kafka-storage.sh info)")
    info.add_argument("-c", "--config", required=True, help="the server .properties file")
    info.set_defaults(func=run_info)


def run_random_uuid(args: argparse.Namespace) -> int:
    from broker.config import random_uuid_str

    print(random_uuid_str())
    return 0


def run_format(args: argparse.Namespace) -> int:
    from broker.config import ConfigError, ServerConfig, parse_uuid, random_uuid_str
    from broker.log.checkpoints import read_meta_properties, write_meta_properties

    try:
        parse_uuid(args.cluster_id)
    except ValueError as exc:
        raise CommandError(f"invalid cluster id: {exc}") from None
    try:
        config = ServerConfig.from_file(args.config)
    except ConfigError as exc:
        raise CommandError(str(exc)) from None
    bootstrap = _scram_records(args.add_scram)
    if config.cluster_id is not None and config.cluster_id != args.cluster_id:
        raise CommandError(f"cluster id {args.cluster_id} differs from cluster.id "
                           f"{config.cluster_id} in {args.config}")
    expected = {"cluster.id": args.cluster_id, "node.id": str(config.node_id)}
    # Check every directory before writing any, so a refusal leaves nothing half-formatted.
    to_format: list[str] = []
    for directory in config.all_data_dirs:
        try:
            existing = read_meta_properties(directory)
        except OSError as exc:
            raise CommandError(f"cannot read {directory}: {exc}") from None
        if existing is None:
            to_format.append(directory)
            continue
        for key, value in expected.items():
            if existing.get(key) != value:
                raise CommandError(f"log directory {directory} is formatted with {key} "
                                   f"{existing.get(key)}, not {value}")
        if not args.ignore_formatted:
            raise CommandError(f"log directory {directory} is already formatted; use "
                               f"--ignore-formatted to skip formatted directories")
    if not to_format:
        print("All of the log directories are already formatted.")
        return 0
    for directory in to_format:
        try:
            Path(directory).mkdir(parents=True, exist_ok=True)
            write_meta_properties(directory, {**expected, "directory.id": random_uuid_str(),
                                              "version": "1"})
        except OSError as exc:
            raise CommandError(f"cannot format {directory}: {exc}") from None
        print(f"Formatting {directory} for cluster {args.cluster_id}, node {config.node_id}")
    if bootstrap:
        from broker.bootstrap_records import write_bootstrap_records

        try:
            write_bootstrap_records(config.metadata_log_dir, bootstrap)
        except OSError as exc:
            raise CommandError(f"cannot write the bootstrap records into "
                               f"{config.metadata_log_dir}: {exc}") from None
        print(f"Added {len(bootstrap)} SCRAM credential(s) for the first start")
    return 0


def _scram_records(arguments: list[str]) -> list:
    """UserScramCredentialRecords for `--add-scram` arguments (salted and iterated here, so
    no password is written anywhere)."""
    if not arguments:
        return []
    import scramp

    from clients.cli.scram_args import ScramArgumentError, parse_scram_argument
    from metadata.scram import MECHANISM_IDS, UserScramCredentialRecord

    records = []
    seen: set[tuple[str, str]] = set()
    for text in arguments:
        try:
            arg = parse_scram_argument(text, need_name=True)
        except ScramArgumentError as exc:
            raise CommandError(f"--add-scram: {exc}") from None
        assert arg.name is not None
        if (arg.name, arg.mechanism) in seen:
            raise CommandError(f"--add-scram: {arg.mechanism} for {arg.name} is given twice")
        seen.add((arg.name, arg.mechanism))
        salt, stored_key, server_key, iterations = scramp.ScramMechanism(
            arg.mechanism).make_auth_info(arg.password, iteration_count=arg.iterations)
        records.append(UserScramCredentialRecord(arg.name, MECHANISM_IDS[arg.mechanism], salt,
                                                 stored_key, server_key, iterations))
    return records


def run_info(args: argparse.Namespace) -> int:
    """Kafka's `kafka-storage.sh info`: the log directories and their meta.properties.
    An unformatted or mismatched directory is a one-line error, as `server start` says it."""
    from broker.cli.server import check_storage
    from broker.config import ConfigError, ServerConfig
    from broker.log.checkpoints import read_meta_properties

    try:
        config = ServerConfig.from_file(args.config)
    except ConfigError as exc:
        raise CommandError(str(exc)) from None
    check_storage(config, args.config)
    directories = config.all_data_dirs
    print("Found log director" + ("y:" if len(directories) == 1 else "ies:"))
    for directory in directories:
        role = (" (metadata)" if len(directories) > 1 and directory == config.metadata_log_dir
                else "")
        print(f"  {directory}{role}")
    print()
    for directory in directories:
        meta = read_meta_properties(directory) or {}
        fields = ", ".join(f"{key}={value}" for key, value in sorted(meta.items()))
        where = "" if len(directories) == 1 else f" in {directory}"
        print(f"Found metadata{where}: {{{fields}}}")
    return 0
