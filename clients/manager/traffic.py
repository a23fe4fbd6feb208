"""Reads the cumulative traffic counters the throughput charts are drawn from: each broker's
metrics endpoint (Kafka's BrokerTopicMetrics names) when the console is given them, else the
cluster's offsets (log end offsets for what comes in, groups' committed offsets for what is
consumed), read in batches through the admin client."""

from __future__ import annotations

import logging
import time
import urllib.request
from typing import Hashable, Mapping

import trio
from prometheus_client.parser import text_string_to_metric_families

from clients.admin.operations import LATEST_TIMESTAMP
from clients.manager.gather import ClusterReader, known_offsets
from clients.manager.throughput import Counter, TrafficSample

logger = logging.getLogger(__name__)

# The metrics endpoint's counters (a family's samples carry the ``_total`` suffix).
METRIC_MEASURES = {
    "kafka_server_brokertopicmetrics_bytesin_total": "bytes_in",
    "kafka_server_brokertopicmetrics_bytesout_total": "bytes_out",
    "kafka_server_brokertopicmetrics_messagesin_total": "messages_in",
}
SCRAPE_TIMEOUT_S = 5.0
MAX_METRICS_BYTES = 64 << 20


def parse_metric_counters(text: str, broker: int
                          ) -> dict[str, dict[Hashable, Counter]]:
    """One broker's per-topic traffic counters out of its Prometheus text."""
    measures: dict[str, dict[Hashable, Counter]] = {m: {} for m in METRIC_MEASURES.values()}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            measure = METRIC_MEASURES.get(sample.name)
            topic = sample.labels.get("topic")
            if measure is not None and topic is not None:
                measures[measure][(broker, topic)] = Counter(broker, topic, sample.value)
    return measures


def _get(url: str, timeout_s: float) -> str:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return response.read(MAX_METRICS_BYTES).decode("utf-8")


async def _scrape(url: str, timeout_s: float) -> str:
    """One endpoint's text, fetched in a worker thread (urllib blocks) that is abandoned,
    not waited for, when ``timeout_s`` passes."""
    with trio.move_on_after(timeout_s):
        return await trio.to_thread.run_sync(_get, url, timeout_s, abandon_on_cancel=True)
    raise TimeoutError(f"no answer within {timeout_s:g} s")


async def metrics_sample(endpoints: Mapping[int, str], timeout_s: float = SCRAPE_TIMEOUT_S
                         ) -> tuple[TrafficSample, list[str]]:
    """Every endpoint's counters, scraped at once, and a line for each broker whose
    endpoint could not be scraped (left out of the sample)."""
    measures: dict[str, dict[Hashable, Counter]] = {m: {} for m in METRIC_MEASURES.values()}
    failures: dict[int, str] = {}

    async def scrape(broker: int, url: str) -> None:
        try:
            counters = parse_metric_counters(await _scrape(url, timeout_s), broker)
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            logger.warning("metrics of broker %d at %s: %s", broker, url, exc)
            failures[broker] = f"metrics of broker {broker} unreachable at {url}: {exc}"
            return
        for measure, found in counters.items():
            measures[measure].update(found)

    async with trio.open_nursery() as nursery:
        for broker, url in sorted(endpoints.items()):
            nursery.start_soon(scrape, broker, url)
    return (TrafficSample(time.time(), "metrics", measures),
            [failures[b] for b in sorted(failures)])


async def offsets_sample(reader: ClusterReader) -> TrafficSample:
    """Log end offsets (messages in) and groups' committed offsets (messages consumed),
    each attributed to the partition's current leader (one ListOffsets batch; one
    OffsetFetch per coordinator)."""
    described = await reader.admin.describe_topics(None)
    leaders = {(p.topic, p.partition): p.leader
               for t in described for p in t.partitions if p.leader >= 0}
    ends = await reader.offsets(leaders, LATEST_TIMESTAMP)
    listings = await reader.admin.list_groups()
    committed = known_offsets(await reader.admin.list_groups_offsets(
        [g.group_id for g in listings]))
    messages_in: dict[Hashable, Counter] = {
        tp: Counter(leaders[tp], tp[0], end) for tp, end in ends.items() if tp in leaders}
    messages_out: dict[Hashable, Counter] = {
        (group, tp): Counter(leaders[tp], tp[0], offset)
        for group, offsets in committed.items() for tp, offset in offsets.items()
        if tp in leaders}
    return TrafficSample(time.time(), "offsets",
                         {"messages_in": messages_in, "messages_out": messages_out})
