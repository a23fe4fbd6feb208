"""Broker metrics: named gauges under Kafka's metric names, published as a JSON file.

Kafka exposes these over JMX. Raftka has no JMX, and a metrics listener would be one more
port to open and secure, so a broker writes a snapshot of its gauges to `metrics.json` in
its first log directory every `raftka.metrics.interval.ms` and logs them whenever they
change. Any monitoring agent that reads files can collect them; `timestamp_ms` tells a live
broker's file from one a stopped broker left behind.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Callable

import trio

from broker.log.partition_log import now_millis
from broker.log.checkpoints import write_atomically
from broker.periodic import run_every

logger = logging.getLogger(__name__)

METRICS_FILE = "metrics.json"

Gauge = Callable[[], int]


class MetricsRegistry:
    """Gauges by name, read only when a snapshot is taken (nothing is counted on hot paths)."""

    def __init__(self) -> None:
        self._gauges: dict[str, Gauge] = {}

    def gauge(self, name: str, read: Gauge) -> None:
        """Register `read` as the gauge `name`; names are unique."""
        if name in self._gauges:
            raise ValueError(f"gauge {name} is already registered")
        self._gauges[name] = read

    def snapshot(self) -> dict[str, int]:
        """Every gauge's current value, in registration order."""
        return {name: read() for name, read in self._gauges.items()}


def write_metrics_file(path: Path, document: dict[str, Any]) -> None:
    """Replace `path` with `document` as JSON; readers see the old file or the new one, never
    half of one. No fsync: a snapshot lost in a crash is rewritten one interval later."""
    write_atomically(path, json.dumps(document) + "\n", durable=False)


def read_metrics_file(path: Path) -> dict[str, Any]:
    """The document a broker last wrote to `path`."""
    document: dict[str, Any] = json.loads(path.read_text())
    return document


class MetricsReporter:
    """Writes `registry`'s snapshot to `path` every `interval_ms` and logs changed values."""

    def __init__(self, registry: MetricsRegistry, path: Path, interval_ms: int,
                 node_id: int) -> None:
        self.registry = registry
        self.path = path
        self.interval_ms = interval_ms
        self.node_id = node_id
        self._last: dict[str, int] | None = None

    def report(self, now_ms: int | None = None) -> dict[str, int]:
        """Take a snapshot, write it out, and log it if it differs from the previous one."""
        gauges = self.registry.snapshot()
        now_ms = now_millis() if now_ms is None else now_ms
        try:
            write_metrics_file(self.path, {"node_id": self.node_id, "timestamp_ms": now_ms,
                                           "gauges": gauges})
        except OSError as exc:
            # A full or read-only disk shows up in the log jobs too; metrics must not stop.
            logger.warning("cannot write %s: %s", self.path, exc)
        if gauges != self._last:
            logger.info("metrics: %s", " ".join(f"{k}={v}" for k, v in gauges.items()))
            self._last = gauges
        return gauges

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
                  ) -> None:
        """Report every interval until cancelled (an interval of 0 or less reports never)."""
        task_status.started()
        if self.interval_ms > 0:
            await run_every("metrics report", self.interval_ms, self.report)
