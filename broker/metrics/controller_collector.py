"""The controller's metrics (Kafka's `kafka.controller:type=KafkaController` gauges,
`ControllerStats` election meters and the Raft metrics), read at scrape time.

As in Kafka, the cluster-wide gauges (offline partitions, broker counts) come from the
active controller only; the other controllers report 0, so a sum over the quorum is the
cluster's value.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable, Iterator

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from metadata.delta import MetadataDelta
from metadata.image import MetadataImage
from metadata.records import NO_LEADER

if TYPE_CHECKING:
    from broker.controller_server import QuorumController


class ElectionCounter:
    """A metadata publisher counting leader elections as they are applied: a partition
    whose leader changed to a live replica. One elected from outside the previous ISR is
    also an unclean election (Kafka's UncleanLeaderElectionsPerSec). Like Kafka's
    ControllerStats, it counts only while `counting()` (this node is the active
    controller), so replaying the metadata log at start-up counts nothing."""

    def __init__(self, counting: Callable[[], bool] = lambda: True) -> None:
        self._counting = counting
        self._lock = threading.Lock()
        self.elections = 0
        self.unclean_elections = 0

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        if not self._counting():
            return
        elections = unclean = 0
        for change in delta.changed_partitions():
            previous, current = change.previous, change.current
            if previous is None or current.leader == NO_LEADER:
                continue
            if current.leader != previous.leader:
                elections += 1
                if current.leader not in previous.isr:
                    unclean += 1
        if elections:
            with self._lock:
                self.elections += elections
                self.unclean_elections += unclean


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


class ControllerCollector(Collector):
    """Reads a controller's quorum status and metadata image when scraped."""

    def __init__(self, controller: "QuorumController", elections: ElectionCounter) -> None:
        self.controller = controller
        self.elections = elections

    def collect(self) -> Iterator[Metric]:
        controller = self.controller
        status = controller.quorum.status()
        image = controller.state.image
        active = controller.is_active
        prefix = "kafka_controller_kafkacontroller_"
        yield _gauge(prefix + "activecontrollercount",
                     "1 on the active controller, 0 on the others.", 1 if active else 0)
        brokers = list(image.brokers.values()) if active else []
        fenced = sum(1 for b in brokers if b.fenced)
        yield _gauge(prefix + "fencedbrokercount", "Registered brokers that are fenced.", fenced)
        yield _gauge(prefix + "activebrokercount", "Registered brokers that are unfenced.",
                     len(brokers) - fenced)
        yield _gauge(prefix + "registeredbrokercount",
                     "Brokers registered with the cluster, fenced or not.", len(brokers))
        partitions = ([p for topic in image.topics_by_id.values()
                       for p in topic.partitions.values()] if active else [])
        yield _gauge(prefix + "globaltopiccount", "Topics in the cluster.",
                     len(image.topics_by_id) if active else 0)
        yield _gauge(prefix + "globalpartitioncount", "Partitions in the cluster.",
                     len(partitions))
        yield _gauge(prefix + "offlinepartitionscount", "Partitions without a leader.",
                     sum(1 for p in partitions if p.leader == NO_LEADER))
        yield _gauge(prefix + "preferredreplicaimbalancecount",
                     "Partitions not led by their preferred replica.",
                     sum(1 for p in partitions
                         if p.leader != NO_LEADER and p.leader != p.preferred_leader))
        yield _gauge(prefix + "lastappliedrecordoffset",
                     "Offset of the last metadata batch this node applied.",
                     status.applied_offset)
        yield _gauge(prefix + "lastcommittedrecordoffset",
                     "Highest metadata log offset known committed (the Raft commit index).",
                     status.high_watermark)
        yield _gauge("raftka_metadata_last_applied_lag_offsets",
                     "Committed metadata log entries this node has not applied yet.",
                     max(status.high_watermark - status.applied_offset, 0))
        raft = "kafka_server_raft_metrics_"
        yield _gauge(raft + "current_epoch", "The Raft term: the controller epoch.",
                     status.epoch)
        yield _gauge(raft + "current_leader", "Node id of the Raft leader, -1 when unknown.",
                     -1 if status.leader_id is None else status.leader_id)
        yield _gauge(raft + "high_watermark", "The metadata log's commit index.",
                     status.high_watermark)
        yield _gauge(raft + "log_end_offset", "The metadata log's end offset on this node.",
                     status.log_end_offset)
        yield CounterMetricFamily(
            "kafka_controller_controllerstats_leaderelections",
            "Partition leader elections applied while this node was the active controller "
            "(the count of Kafka's LeaderElectionRateAndTimeMs).",
            value=self.elections.elections)
        yield CounterMetricFamily(
            "kafka_controller_controllerstats_uncleanleaderelections",
            "Leader elections that picked a replica outside the ISR.",
            value=self.elections.unclean_elections)
