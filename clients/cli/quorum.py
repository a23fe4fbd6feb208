"""`raftka quorum describe`: the metadata quorum's state, like kafka-metadata-quorum.sh.

`--status` prints Kafka's key/value summary, `--replication` one row per voter and
observer, `--json` the same data as one JSON object. Any broker or controller answers
DescribeQuorum for the `__cluster_metadata` partition.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Mapping, Sequence

from clients.cli.admin_tool import add_command_config, command_config

CLIENT_ID = "raftka-metadata-quorum"
DEFAULT_TIMEOUT_MS = 60_000
# Kafka pads the --status keys to this width.
_STATUS_KEY_WIDTH = 24
REPLICATION_HEADER = ("NodeId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                      "LastCaughtUpTimestamp", "Status")


def register(subparsers: argparse._SubParsersAction) -> None:
    quorum = subparsers.add_parser("quorum", help="inspect the KRaft metadata quorum")
    quorum.set_defaults(func=lambda args: quorum.print_help() or 2)
    actions = quorum.add_subparsers(dest="quorum_command", metavar="ACTION")
    describe = actions.add_parser(
        "describe", help="describe the metadata quorum (leader, voters, observers, lag)")
    describe.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]",
                          help="a broker or controller to ask (the first reachable is used)")
    mode = describe.add_mutually_exclusive_group(required=True)
    mode.add_argument("--status", action="store_true", help="print the quorum's summary")
    mode.add_argument("--replication", action="store_true",
                      help="print each voter's and observer's replication state")
    describe.add_argument("--json", action="store_true", help="print one JSON object")
    add_command_config(describe)
    describe.add_argument("--timeout-ms", type=int, default=DEFAULT_TIMEOUT_MS,
                          help="retry an unreachable server or a quorum without a leader "
                               f"for this long (default {DEFAULT_TIMEOUT_MS})")
    describe.set_defaults(func=run_describe)


# ---- pure: from a DescribeQuorum partition to what is printed ----

def _leader_log_end_offset(partition: Mapping[str, Any]) -> int:
    """The leader's log end offset; without a leader among the voters, the furthest voter's."""
    voters = partition["current_voters"]
    for voter in voters:
        if voter["replica_id"] == partition["leader_id"]:
            return int(voter["log_end_offset"])
    return max((int(v["log_end_offset"]) for v in voters), default=0)


def quorum_status(partition: Mapping[str, Any], cluster_id: str | None) -> dict[str, Any]:
    """Kafka's --status figures; the max lag is the leader's LEO minus the furthest behind
    voter's, its time the gap between their last caught-up timestamps (-1 when unknown)."""
    voters = partition["current_voters"]
    leader_id = partition["leader_id"]
    leader = next((v for v in voters if v["replica_id"] == leader_id), None)
    laggard = min(voters, key=lambda v: v["log_end_offset"], default=None)
    max_lag = _leader_log_end_offset(partition) - laggard["log_end_offset"] if laggard else 0
    if leader is None or laggard is None:
        max_lag_time_ms = -1
    elif laggard is leader:
        max_lag_time_ms = 0
    elif leader["last_caught_up_timestamp"] >= 0 and laggard["last_caught_up_timestamp"] >= 0:
        max_lag_time_ms = leader["last_caught_up_timestamp"] - laggard["last_caught_up_timestamp"]
    else:
        max_lag_time_ms = -1
    return {
        "cluster_id": cluster_id,
        "leader_id": leader_id,
        "leader_epoch": partition["leader_epoch"],
        "high_watermark": partition["high_watermark"],
        "max_follower_lag": max_lag,
        "max_follower_lag_time_ms": max_lag_time_ms,
        "current_voters": [v["replica_id"] for v in voters],
        "current_observers": [o["replica_id"] for o in partition["observers"]],
    }


def replication_rows(partition: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per replica: the leader, the other voters, then the observers (Kafka's order)."""
    leader_id = partition["leader_id"]
    leader_leo = _leader_log_end_offset(partition)
    voters = partition["current_voters"]
    ordered = ([(v, "Leader") for v in voters if v["replica_id"] == leader_id]
               + [(v, "Follower") for v in voters if v["replica_id"] != leader_id]
               + [(o, "Observer") for o in partition["observers"]])
    return [{
        "node_id": replica["replica_id"],
        "log_end_offset": replica["log_end_offset"],
        "lag": leader_leo - replica["log_end_offset"],
        "last_fetch_timestamp": replica["last_fetch_timestamp"],
        "last_caught_up_timestamp": replica["last_caught_up_timestamp"],
        "status": status,
    } for replica, status in ordered]


def format_status(status: Mapping[str, Any]) -> list[str]:
    def ids(values: Sequence[int]) -> str:
        return "[" + ",".join(str(v) for v in values) + "]"

    cluster_id = status["cluster_id"] if status["cluster_id"] is not None else "unknown"
    pairs = [
        ("ClusterId:", cluster_id),
        ("LeaderId:", status["leader_id"]),
        ("LeaderEpoch:", status["leader_epoch"]),
        ("HighWatermark:", status["high_watermark"]),
        ("MaxFollowerLag:", status["max_follower_lag"]),
        ("MaxFollowerLagTimeMs:", status["max_follower_lag_time_ms"]),
        ("CurrentVoters:", ids(status["current_voters"])),
        ("CurrentObservers:", ids(status["current_observers"])),
    ]
    return [f"{key:<{_STATUS_KEY_WIDTH}}{value}" for key, value in pairs]


def format_replication(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """A left-aligned table, columns two spaces apart."""
    keys = ("node_id", "log_end_offset", "lag", "last_fetch_timestamp",
            "last_caught_up_timestamp", "status")
    table = [list(REPLICATION_HEADER)] + [[str(row[k]) for k in keys] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(keys))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip()
            for line in table]


def metadata_partition(response: Mapping[str, Any], server: str) -> Mapping[str, Any]:
    """The `__cluster_metadata` partition of a DescribeQuorum answer; CommandError on errors."""
    from clients.cli.main import CommandError
    from clients.admin.group_operations import METADATA_PARTITION, METADATA_TOPIC
    from clients.protocol import ErrorCode

    def failure(code: int, message: str | None) -> CommandError:
        error = ErrorCode.from_code(code)
        detail = message or error.message
        return CommandError(f"{server} answered DescribeQuorum with {error.name} ({code}): "
                            f"{detail}")

    if response["error_code"] != ErrorCode.NONE:
        raise failure(response["error_code"], response.get("error_message"))
    for topic in response["topics"]:
        if topic["topic_name"] != METADATA_TOPIC:
            continue
        for partition in topic["partitions"]:
            if partition["partition_index"] != METADATA_PARTITION:
                continue
            if partition["error_code"] != ErrorCode.NONE:
                raise failure(partition["error_code"], partition.get("error_message"))
            return partition
    raise CommandError(f"{server} answered DescribeQuorum without "
                       f"{METADATA_TOPIC}-{METADATA_PARTITION}")


# ---- I/O ----

def _ask(server: str, timeout_s: float, want_cluster_id: bool,
         settings: Mapping[str, str] | None = None) -> tuple[Mapping[str, Any], str | None]:
    """DescribeQuorum (and DescribeCluster when asked) from the first reachable server;
    `settings` are client settings (security.protocol, ssl.*, sasl.*). A refused
    authentication or a security protocol mismatch ends it at once; unreachable servers
    are asked again until the timeout, which it says once after half a second."""
    import logging

    from clients.cli.main import CommandError
    from clients.net import (
        BlockingKafkaConnection,
        ClientSecurity,
        FatalConnectionError,
        KafkaConnectionError,
        parse_bootstrap_servers,
    )
    from clients.admin.group_operations import METADATA_PARTITION, METADATA_TOPIC
    from clients.admin.retries import RetryBudget
    from clients.net.failure_log import UnreachableNotice
    from clients.net.sasl import sasl_credentials
    from clients.net.tls import TlsConfigError
    from clients.protocol import ApiKey, KafkaError, ProtocolError

    try:
        security = ClientSecurity.from_config(settings or {})
        sasl = sasl_credentials(settings or {})
    except (TlsConfigError, ValueError) as exc:
        raise CommandError(f"--command-config: {exc}") from None
    notice = UnreachableNotice(logging.getLogger(__name__),
                               f"--timeout-ms ({timeout_s * 1000:.0f} ms) runs out")

    try:
        addresses = parse_bootstrap_servers(server)
    except ValueError as exc:
        raise CommandError(f"--bootstrap-server: {exc}") from None
    budget = RetryBudget(time.monotonic() + timeout_s)
    while True:
        failures: list[str] = []
        answered = False  # some server answered, with an error worth asking again
        for host, port in addresses:
            name = f"{host}:{port}"
            try:
                with BlockingKafkaConnection(host, port, client_id=CLIENT_ID,
                                             timeout=max(0.1, budget.deadline - time.monotonic()),
                                             security=security, sasl=sasl,
                                             diagnose=True) as conn:
                    response = conn.request(ApiKey.DESCRIBE_QUORUM, {"topics": [{
                        "topic_name": METADATA_TOPIC,
                        "partitions": [{"partition_index": METADATA_PARTITION}]}]})
                    retriable = _routing_error(response)
                    if retriable is not None:
                        answered = True
                        failures.append(f"{name} answered DescribeQuorum with "
                                        f"{retriable.name} ({int(retriable)}): "
                                        f"{retriable.message}")
                        continue
                    partition = metadata_partition(response, name)
                    cluster_id = _cluster_id(conn, name) if want_cluster_id else None
                    return partition, cluster_id
            except FatalConnectionError as exc:
                raise CommandError(str(exc)) from None
            except KafkaConnectionError as exc:
                failures.append(str(exc))
            except (KafkaError, ProtocolError) as exc:
                raise CommandError(f"DescribeQuorum to {name} failed: {exc}") from None
        # A controller election or a restarting node: ask again until the timeout, as
        # Kafka's admin client retries a retriable DescribeQuorum failure.
        wait = budget.next_wait(time.monotonic())
        if wait is None:
            raise CommandError(f"no server in --bootstrap-server {server} answered within "
                               f"the timeout: " + "; ".join(failures))
        if not answered:
            notice.failed(KafkaConnectionError(f"no broker reachable at {server}: "
                                               + "; ".join(failures)), time.monotonic())
        time.sleep(wait)


def _routing_error(response: Mapping[str, Any]) -> Any:
    """The retriable error (no leader yet, not the controller) of a DescribeQuorum answer,
    at top level or for the metadata partition; None otherwise."""
    from clients.admin.retries import ROUTING_ERRORS
    from clients.protocol import ErrorCode

    codes = [response.get("error_code", 0)] + [
        p.get("error_code", 0) for t in response.get("topics") or ()
        for p in t.get("partitions") or ()]
    for code in codes:
        error = ErrorCode.from_code(int(code))
        if error in ROUTING_ERRORS:
            return error
    return None


def _cluster_id(conn: Any, server: str) -> str | None:
    """The cluster id from DescribeCluster, or None (with a note on stderr) if unavailable."""
    from clients.net import KafkaConnectionError
    from clients.protocol import ApiKey, ErrorCode, KafkaError, ProtocolError

    try:
        response = conn.request(ApiKey.DESCRIBE_CLUSTER,
                                {"include_cluster_authorized_operations": False})
    except (KafkaError, ProtocolError, KafkaConnectionError) as exc:
        print(f"warning: DescribeCluster to {server} failed: {exc}", file=sys.stderr)
        return None
    if response["error_code"] != ErrorCode.NONE:
        error = ErrorCode.from_code(response["error_code"])
        print(f"warning: DescribeCluster to {server} answered {error.name}", file=sys.stderr)
        return None
    return response["cluster_id"]


def run_describe(args: argparse.Namespace) -> int:
    partition, cluster_id = _ask(args.bootstrap_server, args.timeout_ms / 1000,
                                 want_cluster_id=args.status, settings=command_config(args))
    if args.status:
        status = quorum_status(partition, cluster_id)
        lines = [json.dumps(status)] if args.json else format_status(status)
    else:
        rows = replication_rows(partition)
        if args.json:
            lines = [json.dumps({
                "leader_id": partition["leader_id"],
                "leader_epoch": partition["leader_epoch"],
                "high_watermark": partition["high_watermark"],
                "replicas": rows,
            })]
        else:
            lines = format_replication(rows)
    print("\n".join(lines))
    return 0
