"""Broker gauges: the registry, the metrics file, and the data plane's replica gauges."""

from __future__ import annotations

import logging

import pytest
import trio

from broker.metrics import METRICS_FILE, MetricsRegistry, MetricsReporter, read_metrics_file
from metadata.records import PartitionChangeRecord
from tests.unit.apis.harness import BROKER_ID, running_broker


def test_registry_snapshot_reads_every_gauge_and_refuses_duplicates() -> None:
    registry = MetricsRegistry()
    value = [3]
    registry.gauge("LeaderCount", lambda: value[0])
    registry.gauge("PartitionCount", lambda: 7)
    value[0] = 4
    assert registry.snapshot() == {"LeaderCount": 4, "PartitionCount": 7}
    with pytest.raises(ValueError):
        registry.gauge("LeaderCount", lambda: 0)


def test_reporter_replaces_the_file_and_logs_only_changes(tmp_path, caplog) -> None:
    registry = MetricsRegistry()
    value = [0]
    registry.gauge("UnderReplicatedPartitions", lambda: value[0])
    path = tmp_path / METRICS_FILE
    reporter = MetricsReporter(registry, path, 1000, node_id=5)
    with caplog.at_level(logging.INFO, logger="broker.metrics"):
        reporter.report(now_ms=1)
        reporter.report(now_ms=2)
        value[0] = 2
        reporter.report(now_ms=3)
    assert read_metrics_file(path) == {"node_id": 5, "timestamp_ms": 3,
                                       "gauges": {"UnderReplicatedPartitions": 2}}
    assert [r.getMessage() for r in caplog.records] == [
        "metrics: UnderReplicatedPartitions=0", "metrics: UnderReplicatedPartitions=2"]
    assert [p.name for p in tmp_path.iterdir()] == [METRICS_FILE]  # no temporary left


async def test_metrics_file_shows_a_led_partition_with_a_short_isr(tmp_path):
    async with running_broker(tmp_path, extra={"raftka.metrics.interval.ms": "20"}) as broker:
        topic_id = broker.create_topic("t", replicas=(BROKER_ID, 2),
                                       configs={"min.insync.replicas": "2"})
        path = broker.server.log_manager.log_dirs[0] / METRICS_FILE

        async def gauges_become(expected: dict[str, int]) -> None:
            with trio.fail_after(5):
                while True:  # the file is rewritten every 20 ms
                    if path.exists():
                        gauges = read_metrics_file(path)["gauges"]
                        if all(gauges[k] == v for k, v in expected.items()):
                            return
                    await trio.sleep(0.02)

        await gauges_become({"UnderReplicatedPartitions": 0, "LeaderCount": 1,
                             "PartitionCount": 1, "OfflinePartitionsCount": 0})
        broker.publish([PartitionChangeRecord(partition_id=0, topic_id=topic_id,
                                              isr=(BROKER_ID,))])
        await gauges_become({"UnderReplicatedPartitions": 1, "UnderMinIsrPartitionCount": 1})
        assert read_metrics_file(path)["node_id"] == BROKER_ID
