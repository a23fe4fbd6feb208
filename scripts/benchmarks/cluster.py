"""What the cluster benchmarks (`scripts/bench`, `scripts/bench-groups`) share: a throwaway
local cluster started through the launcher (the `scripts/bootstrap-quorum` code path), raw
requests to it, topic creation, and latency percentiles."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

from cluster.launcher import bootstrap_quorum
from cluster.launcher.layout import ClusterInfo
from clients.net import BlockingKafkaConnection
from clients.protocol import ApiKey, ErrorCode
from cluster.testing.waiting import wait_for

HOST = "127.0.0.1"
def start_cluster(directory: Path, nodes: int,
                  overrides: Mapping[str, str] | None = None) -> ClusterInfo:
    """`nodes` combined nodes on random ports under `directory`; another port range is tried
    when one is taken."""
    for _ in range(5):
        try:
            return bootstrap_quorum(directory / f"c{random.randrange(10**6)}", nodes, 0,
                                    random.randrange(20000, 31000), dict(overrides or {}))
        except Exception as exc:
            if "in use" not in str(exc):
                raise
    raise SystemExit("no free ports found")


def request(port: int, api_key: int, body: dict[str, Any],
            version: int | None = None) -> dict[str, Any]:
    """One request on a fresh connection to the broker at `port`."""
    with BlockingKafkaConnection(HOST, port, client_id="bench", timeout=30) as conn:
        return conn.request(api_key, body, version)


def create_topic(port: int, name: str, partitions: int, rf: int,
                 configs: Mapping[str, str] | None = None) -> dict[int, int]:
    """Create `name` and wait until every partition has a leader and a full ISR; returns
    {partition: leader}."""
    def created() -> bool:
        answer = request(port, ApiKey.CREATE_TOPICS, {"topics": [{
            "name": name, "num_partitions": partitions, "replication_factor": rf,
            "assignments": [], "configs": [{"name": k, "value": v}
                                           for k, v in (configs or {}).items()]}],
            "timeout_ms": 10_000, "validate_only": False})
        result = answer["topics"][0]
        code = ErrorCode(result["error_code"])
        if code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS) and not code.retriable:
            raise SystemExit(f"cannot create topic {name}: {code.name}: {result.get('error_message')}")
        return code in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS)

    def leaders() -> dict[int, int] | None:
        meta = request(port, ApiKey.METADATA, {"topics": [{"name": name}],
                                                "allow_auto_topic_creation": False})
        parts = meta["topics"][0]["partitions"]
        if parts and all(p["leader_id"] >= 0 and len(p["isr_nodes"]) == rf for p in parts):
            return {p["partition_index"]: p["leader_id"] for p in parts}
        return None

    wait_for(created, f"topic {name} to be created", 30)
    return wait_for(leaders, f"full ISRs for topic {name}", 30)


def delete_topic(port: int, name: str, data_dirs: Iterable[Path]) -> None:
    """Delete `name` and wait until no broker keeps a partition directory of it under
    `data_dirs`, so the memory its files held is free again."""
    answer = request(port, ApiKey.DELETE_TOPICS, {"topics": [{"name": name}],
                                                   "topic_names": [name], "timeout_ms": 10_000})
    code = ErrorCode(answer["responses"][0]["error_code"])
    if code not in (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
        raise SystemExit(f"cannot delete topic {name}: {code.name}")
    # A partition directory is "<topic>-<n>", renamed "<topic>-<n>.<id>-delete" while it goes.
    pattern = re.compile(re.escape(name) + r"-\d+(\..*)?$")

    def gone() -> bool:
        return not any(pattern.match(child.name)
                       for directory in data_dirs if directory.is_dir()
                       for child in directory.iterdir())

    wait_for(gone, f"the files of topic {name} to be deleted", 30)


def percentiles_ms(latencies_s: list[float], digits: int = 1) -> dict[str, float | None]:
    """p50 and p99 of `latencies_s` (seconds), in milliseconds."""
    ranked = sorted(latencies_s)
    if not ranked:
        return {"p50_ms": None, "p99_ms": None}
    return {"p50_ms": round(ranked[len(ranked) // 2] * 1000, digits),
            "p99_ms": round(ranked[int(len(ranked) * 0.99)] * 1000, digits)}
