"""Counters a broker keeps on its hot paths (Kafka's BrokerTopicStats, RequestMetrics,
ISR change meters and LogFlushStats), read by the Prometheus collector at scrape time.

Everything here runs on the trio thread and is plain integer arithmetic: no locks, no
per-record work. Rates are left to Prometheus (`rate()` over the `_total` counters).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Iterable

from broker.stats.histogram import Histogram
from clients.protocol import ApiKey
from clients.protocol.message import Message


@dataclass
class TopicCounters:
    """One topic's BrokerTopicMetrics (client traffic only, as in Kafka)."""

    bytes_in: int = 0
    bytes_out: int = 0
    messages_in: int = 0


class BrokerTopicStats:
    """Per-topic byte and message counters plus the replication totals."""

    def __init__(self) -> None:
        self.topics: dict[str, TopicCounters] = {}
        self.replication_bytes_in = 0
        self.replication_bytes_out = 0

    def _of(self, topic: str) -> TopicCounters:
        counters = self.topics.get(topic)
        if counters is None:
            counters = self.topics[topic] = TopicCounters()
        return counters

    def record_produce(self, topic: str, size: int, messages: int) -> None:
        """A producer's batch of `messages` records, `size` bytes, appended by the leader."""
        counters = self._of(topic)
        counters.bytes_in += size
        counters.messages_in += messages

    def record_fetch(self, topic: str, size: int, from_follower: bool) -> None:
        """`size` bytes of records returned by a fetch."""
        if from_follower:
            self.replication_bytes_out += size
        elif size:
            self._of(topic).bytes_out += size

    def forget_except(self, live_topics: Iterable[str]) -> None:
        """Drop the counters of deleted topics (Kafka removes their metrics on deletion),
        so the topic label stays bounded by the topics that exist."""
        live = set(live_topics)
        for topic in [t for t in self.topics if t not in live]:
            del self.topics[topic]


@dataclass
class ApiCounters:
    """One API's RequestMetrics: requests by version, errors by code, total time."""

    requests_by_version: dict[int, int] = field(default_factory=dict)
    errors_by_code: dict[int, int] = field(default_factory=dict)
    total_time_ms: Histogram = field(default_factory=Histogram)


FETCH = 1
FETCH_CONSUMER = "FetchConsumer"
FETCH_FOLLOWER = "FetchFollower"


@functools.lru_cache(maxsize=256)  # per request on every API: the name is built once
def request_name(api_key: int) -> str:
    """Kafka's request name for an API key (`ListOffsets`), or the number if unknown."""
    try:
        return "".join(word.title() for word in ApiKey(api_key).name.split("_"))
    except ValueError:
        return str(api_key)


class RequestStats:
    """Kafka's RequestMetrics per request name. As in Kafka, a Fetch also counts under
    FetchConsumer or FetchFollower (a follower's long polls would otherwise hide the
    consumers' latency). Error counts follow Kafka's `errorCounts()`: every `error_code` in
    the response body is counted once, NONE included."""

    def __init__(self) -> None:
        self.requests: dict[str, ApiCounters] = {}

    def record(self, request: Any, body: dict[str, Any] | None, elapsed_ms: float) -> None:
        """`request` is a decoded request (api_key, api_version, body)."""
        names = [request_name(request.api_key)]
        if request.api_key == FETCH:
            from_follower = request.body.replica_id >= 0
            names.append(FETCH_FOLLOWER if from_follower else FETCH_CONSUMER)
        codes = error_code_counts(body) if body is not None else {}
        for name in names:
            counters = self.requests.get(name)
            if counters is None:
                counters = self.requests[name] = ApiCounters()
            version = request.api_version
            counters.requests_by_version[version] = (
                counters.requests_by_version.get(version, 0) + 1)
            counters.total_time_ms.observe(elapsed_ms)
            errors = counters.errors_by_code
            for code, count in codes.items():
                errors[code] = errors.get(code, 0) + count


def error_code_counts(body: Any) -> dict[int, int]:
    """How often each `error_code` value occurs in a response body (dicts, or the generated
    message classes), at any depth. Record payloads are bytes or file ranges, never walked.
    One pass without generators: a response of a million partitions is walked on the event
    loop."""
    counts: dict[int, int] = {}
    stack = [body]
    pop, push = stack.pop, stack.append
    while stack:
        item = pop()
        if isinstance(item, dict):
            code = item.get("error_code")
            values: Iterable[Any] = item.values()
        elif isinstance(item, Message):
            code = getattr(item, "error_code", None)
            values = [getattr(item, name) for name in item.__slots__]
        else:
            code, values = None, item
        if isinstance(code, int):
            counts[code] = counts.get(code, 0) + 1
        for value in values:
            if isinstance(value, (dict, list, Message)):
                push(value)
    return counts


class ReplicaStats:
    """ISR changes this broker made as leader (Kafka's IsrShrinksPerSec/IsrExpandsPerSec)."""

    def __init__(self) -> None:
        self.isr_shrinks = 0
        self.isr_expands = 0

    def record_isr_change(self, old: tuple[int, ...], new: tuple[int, ...]) -> None:
        if len(new) < len(old):
            self.isr_shrinks += 1
        elif len(new) > len(old):
            self.isr_expands += 1
