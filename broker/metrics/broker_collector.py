"""The broker's metrics as Prometheus metric families, read from its live state at scrape.

Names are what Kafka's JMX exporter rules make of Kafka's MBeans (for example
`kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions` becomes
`kafka_server_replicamanager_underreplicatedpartitions`; a `...PerSec` meter's count
becomes `..._total`). Consumer lag, which Kafka leaves to a separate exporter, uses the
names of the common Kafka exporter (`kafka_consumergroup_lag`).

Labels stay bounded: per API, per error code, per listener, per topic (deleted topics are
dropped), per partition only for the log gauges Kafka has per partition and for the lag of
the groups this broker coordinates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from broker.group.model import ClassicGroupState
from broker.stats.counters import RequestStats
from broker.stats.histogram import Histogram
from clients.protocol import ErrorCode

if TYPE_CHECKING:
    from broker.group.coordinator import GroupCoordinator
    from broker.log.manager import LogManager
    from broker.metrics.remote_offsets import RemoteEndOffsets
    from broker.network import NetworkServer
    from broker.replica.manager import ReplicaManager

# The delayed operations Kafka reports purgatory sizes for.
PURGATORY_KINDS = ("Produce", "Fetch")


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def add_histogram(family: HistogramMetricFamily, labels: list[str],
                  histogram: Histogram) -> None:
    family.add_metric(labels, histogram.cumulative(), histogram.sum)


def request_families(stats: RequestStats) -> Iterator[Metric]:
    """RequestsPerSec, ErrorsPerSec and TotalTimeMs per API."""
    requests = CounterMetricFamily(
        "kafka_network_requestmetrics_requests", "Requests answered, by API and version.",
        labels=["request", "version"])
    errors = CounterMetricFamily(
        "kafka_network_requestmetrics_errors",
        "Error codes in responses, by API and error (NONE included, as Kafka counts them).",
        labels=["request", "error"])
    total_time = HistogramMetricFamily(
        "kafka_network_requestmetrics_totaltimems",
        "Time from a request's arrival at its handler to its response, in milliseconds.",
        labels=["request"])
    for name, counters in sorted(stats.requests.items()):
        for version, count in sorted(counters.requests_by_version.items()):
            requests.add_metric([name, str(version)], count)
        for code, count in sorted(counters.errors_by_code.items()):
            errors.add_metric([name, error_name(code)], count)
        add_histogram(total_time, [name], counters.total_time_ms)
    yield requests
    yield errors
    yield total_time


class BrokerCollector(Collector):
    """Reads a broker's replicas, logs, network, purgatory and groups when scraped."""

    def __init__(self, replicas: "ReplicaManager", logs: "LogManager",
                 network: "NetworkServer", requests: RequestStats,
                 groups: "GroupCoordinator",
                 remote_offsets: "RemoteEndOffsets | None" = None) -> None:
        self.replicas = replicas
        self.logs = logs
        self.network = network
        self.requests = requests
        self.groups = groups
        self.remote_offsets = remote_offsets

    def collect(self) -> Iterator[Metric]:
        yield from self._replica_manager()
        yield from self._topics()
        yield from request_families(self.requests)
        yield from self._network()
        yield from self._logs()
        yield from self._groups()

    def _replica_manager(self) -> Iterator[Metric]:
        replicas = self.replicas
        for name, value, doc in (
            ("underreplicatedpartitions", replicas.under_replicated_partitions,
             "Partitions led here whose ISR is smaller than their replica set."),
            ("underminisrpartitioncount", replicas.under_min_isr_partitions,
             "Partitions led here whose ISR is below min.insync.replicas."),
            ("leadercount", replicas.leader_count, "Partitions this broker leads."),
            ("partitioncount", replicas.partition_count,
             "Replicas on this broker, led or followed."),
        ):
            yield GaugeMetricFamily(f"kafka_server_replicamanager_{name}", doc, value=value)
        stats = replicas.replica_stats
        yield CounterMetricFamily("kafka_server_replicamanager_isrshrinks",
                                  "ISR shrinks committed for partitions led here.",
                                  value=stats.isr_shrinks)
        yield CounterMetricFamily("kafka_server_replicamanager_isrexpands",
                                  "ISR expansions committed for partitions led here.",
                                  value=stats.isr_expands)
        purgatory = GaugeMetricFamily(
            "kafka_server_delayedoperationpurgatory_purgatorysize",
            "Requests waiting in the purgatory (acks=all appends, long-poll fetch).",
            labels=["delayedOperation"])
        for kind in PURGATORY_KINDS:
            purgatory.add_metric([kind], replicas.purgatory.waiting.get(kind, 0))
        yield purgatory

    def _topics(self) -> Iterator[Metric]:
        stats = self.replicas.topic_stats
        stats.forget_except(self.replicas.image.topics_by_name)
        families = {
            "bytesin": CounterMetricFamily("kafka_server_brokertopicmetrics_bytesin",
                                           "Bytes of records produced to leaders here.",
                                           labels=["topic"]),
            "bytesout": CounterMetricFamily("kafka_server_brokertopicmetrics_bytesout",
                                            "Bytes of records fetched by consumers.",
                                            labels=["topic"]),
            "messagesin": CounterMetricFamily("kafka_server_brokertopicmetrics_messagesin",
                                              "Records produced to leaders here.",
                                              labels=["topic"]),
        }
        for topic, counters in sorted(stats.topics.items()):
            families["bytesin"].add_metric([topic], counters.bytes_in)
            families["bytesout"].add_metric([topic], counters.bytes_out)
            families["messagesin"].add_metric([topic], counters.messages_in)
        yield from families.values()
        yield CounterMetricFamily("kafka_server_brokertopicmetrics_replicationbytesout",
                                  "Bytes of records fetched by follower replicas.",
                                  value=stats.replication_bytes_out)

    def _network(self) -> Iterator[Metric]:
        family = GaugeMetricFamily("kafka_server_socket_server_metrics_connection_count",
                                   "Open client connections per listener.",
                                   labels=["listener"])
        for listener, count in sorted(self.network.connections_by_listener().items()):
            family.add_metric([listener], count)
        yield family

    def _logs(self) -> Iterator[Metric]:
        size = GaugeMetricFamily("kafka_log_log_size", "Bytes of a partition's log segments.",
                                 labels=["topic", "partition"])
        end = GaugeMetricFamily("kafka_log_log_logendoffset", "A partition's log end offset.",
                                labels=["topic", "partition"])
        start = GaugeMetricFamily("kafka_log_log_logstartoffset",
                                  "A partition's log start offset.",
                                  labels=["topic", "partition"])
        for partition in sorted(self.replicas.partitions(), key=lambda p: p.key):
            labels = [partition.topic, str(partition.partition_id)]
            log = partition.log
            size.add_metric(labels, log.size_in_bytes)
            end.add_metric(labels, log.log_end_offset)
            start.add_metric(labels, log.log_start_offset)
        yield size
        yield end
        yield start
        flush = HistogramMetricFamily("kafka_log_logflushstats_logflushrateandtimems",
                                      "Time each log flush (fsync) took, in milliseconds.",
                                      labels=[])
        add_histogram(flush, [], self.logs.flush_time_ms)
        yield flush

    def _groups(self) -> Iterator[Metric]:
        members = GaugeMetricFamily("kafka_consumergroup_members",
                                    "Members of each group this broker coordinates.",
                                    labels=["consumergroup"])
        state = GaugeMetricFamily("kafka_consumergroup_state",
                                  "1 for the state each group this broker coordinates is in.",
                                  labels=["consumergroup", "state"])
        offset = GaugeMetricFamily("kafka_consumergroup_current_offset",
                                   "A group's committed offset per partition.",
                                   labels=["consumergroup", "topic", "partition"])
        lag = GaugeMetricFamily(
            "kafka_consumergroup_lag",
            "High watermark minus the group's committed offset, per partition.",
            labels=["consumergroup", "topic", "partition"])
        for group_id, group in sorted(self.groups.engine.groups.items()):
            members.add_metric([group_id], len(group.members))
            for candidate in ClassicGroupState:
                state.add_metric([group_id, candidate.value],
                                 1 if group.state is candidate else 0)
            for (topic, partition_id), committed in sorted(group.offsets.items()):
                labels = [group_id, topic, str(partition_id)]
                offset.add_metric(labels, committed.offset)
                end = self._high_watermark(topic, partition_id)
                if end is not None:
                    lag.add_metric(labels, max(end - committed.offset, 0))
        yield members
        yield state
        yield offset
        yield lag

    def _high_watermark(self, topic: str, partition_id: int) -> int | None:
        """The local replica's high watermark, else the one last read from the leader."""
        replica = self.replicas.get_partition(topic, partition_id)
        if replica is not None:
            return replica.high_watermark
        if self.remote_offsets is None:
            return None
        return self.remote_offsets.end_offset((topic, partition_id))
