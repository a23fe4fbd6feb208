"""Per-node CPU time of a local cluster, read from /proc/<pid>/stat (utime + stime), and its
cost per GB appended."""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator, Mapping

from cluster.launcher.layout import ClusterInfo
from cluster.launcher.processes import read_pid


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU time of process `pid` so far (None where /proc is not there)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, TypeError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def node_pids(cluster: ClusterInfo) -> dict[int, int | None]:
    return {node.node_id: read_pid(node) for node in cluster.nodes}


@contextmanager
def nodes_cpu(pids: Mapping[int, int | None]) -> Iterator[dict[int, float | None]]:
    """Yields a dict that holds, after the block, the CPU seconds each node used inside it."""
    used: dict[int, float | None] = {}
    before = {node: cpu_seconds(pid) for node, pid in pids.items()}
    yield used
    for node, pid in pids.items():
        after = cpu_seconds(pid)
        used[node] = (round(after - before[node], 3)
                      if after is not None and before[node] is not None else None)


def per_gb(cpu_s: float | None, appended_bytes: int) -> float | None:
    """CPU seconds per GB (1e9 bytes) appended."""
    if cpu_s is None or not appended_bytes:
        return None
    return round(cpu_s / (appended_bytes / 1e9), 2)
