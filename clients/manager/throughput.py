"""Throughput over time: rates per broker and per topic from cumulative counters sampled by
the console (pure: the caller supplies the counters and the time).

A sample holds, per measure (``bytes_in``, ``messages_in``, ...), cumulative counters each
attributed to one broker and one topic: from the metrics endpoints a counter is one broker's
total for one topic; from offsets it is one partition's log end offset (or one group's
committed offset), attributed to the partition's current leader. A counter's rate is its
increase over the time between two samples; a counter that went down (a restarted broker, a
truncated log) counts as zero for that interval. Rates are then summed per broker and per
topic, so a leader moving between samples never shows as a spike."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Hashable, Mapping

DEFAULT_POINTS = 360

# The measures and how the page names them.
MEASURE_TITLES = {
    "bytes_in": "Bytes in/s",
    "bytes_out": "Bytes out/s",
    "messages_in": "Messages in/s",
    "messages_out": "Messages consumed/s",
}


@dataclass(frozen=True)
class Counter:
    broker: int
    topic: str
    value: float


@dataclass(frozen=True)
class TrafficSample:
    """Cumulative counters at time ``at`` (s), per measure, keyed by what each counts."""

    at: float
    source: str  # "metrics" or "offsets"
    measures: Mapping[str, Mapping[Hashable, Counter]] = field(default_factory=dict)


SeriesKey = tuple[str, str, str]  # (measure, "broker" or "topic", broker id or topic name)


class ThroughputHistory:
    """The last ``max_points`` (time s, rate per s) of each broker and topic, per measure."""

    def __init__(self, max_points: int = DEFAULT_POINTS) -> None:
        self.max_points = max_points
        self.source: str | None = None
        self.problems: list[str] = []  # what the last round could not sample, for the page
        self._previous: TrafficSample | None = None
        self._series: dict[SeriesKey, deque[tuple[float, float]]] = {}

    def record(self, sample: TrafficSample) -> None:
        previous, self._previous = self._previous, sample
        if previous is None or previous.source != sample.source or sample.at <= previous.at:
            if previous is not None and previous.source != sample.source:
                self._series.clear()
            self.source = sample.source
            return
        self.source = sample.source
        elapsed = sample.at - previous.at
        rates: dict[SeriesKey, float] = {}
        for measure, counters in sample.measures.items():
            before = previous.measures.get(measure, {})
            for key, counter in counters.items():
                rates.setdefault((measure, "broker", str(counter.broker)), 0.0)
                rates.setdefault((measure, "topic", counter.topic), 0.0)
                earlier = before.get(key)
                if earlier is None or counter.value < earlier.value:
                    continue
                rate = (counter.value - earlier.value) / elapsed
                rates[(measure, "broker", str(counter.broker))] += rate
                rates[(measure, "topic", counter.topic)] += rate
        for key, rate in rates.items():
            self._series.setdefault(key, deque(maxlen=self.max_points)).append(
                (sample.at, rate))
        for gone in [key for key in self._series if key not in rates]:
            del self._series[gone]

    def series(self, measure: str, kind: str, name: str) -> list[tuple[float, float]]:
        return list(self._series.get((measure, kind, name), ()))

    def latest(self, measure: str, kind: str, name: str) -> float | None:
        points = self._series.get((measure, kind, name))
        return points[-1][1] if points else None

    def measures(self) -> list[str]:
        present = {key[0] for key in self._series}
        return [m for m in MEASURE_TITLES if m in present]

    def names(self, measure: str, kind: str) -> list[str]:
        """The brokers (by id) or topics (busiest first, by their newest rate) measured."""
        names = [key[2] for key in self._series if key[0] == measure and key[1] == kind]
        if kind == "broker":
            return sorted(names, key=lambda n: int(n) if n.lstrip("-").isdigit() else 0)
        return sorted(names, key=lambda n: (-(self.latest(measure, kind, n) or 0.0), n))


@dataclass(frozen=True)
class ThroughputSection:
    """One measure on the throughput page: its brokers, and its busiest topics."""

    measure: str
    title: str
    brokers: list[str]
    topics: list[str]
    quiet_topics: int  # topics measured but not charted


def throughput_sections(history: ThroughputHistory, max_topics: int
                        ) -> list[ThroughputSection]:
    sections = []
    for measure in history.measures():
        topics = history.names(measure, "topic")
        sections.append(ThroughputSection(measure, MEASURE_TITLES[measure],
                                          history.names(measure, "broker"),
                                          topics[:max_topics],
                                          max(len(topics) - max_topics, 0)))
    return sections
