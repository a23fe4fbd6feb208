"""Throughput rates from cumulative counters, and the metrics endpoint's counters."""

from __future__ import annotations

from clients.manager.throughput import Counter, ThroughputHistory, TrafficSample, \
    throughput_sections
from clients.manager.traffic import parse_metric_counters


def _offsets(at: float, ends: dict[tuple[str, int], tuple[int, int]]) -> TrafficSample:
    return TrafficSample(at, "offsets", {"messages_in": {
        tp: Counter(leader, tp[0], end) for tp, (leader, end) in ends.items()}})


def test_rates_are_increases_per_second_summed_per_broker_and_topic() -> None:
    history = ThroughputHistory()
    history.record(_offsets(100.0, {("a", 0): (1, 0), ("a", 1): (2, 10), ("b", 0): (2, 5)}))
    assert history.measures() == []  # one sample: no rate yet
    history.record(_offsets(110.0, {("a", 0): (1, 100), ("a", 1): (2, 30), ("b", 0): (2, 5)}))
    assert history.latest("messages_in", "topic", "a") == 12.0
    assert history.latest("messages_in", "topic", "b") == 0.0
    assert history.latest("messages_in", "broker", "1") == 10.0
    assert history.latest("messages_in", "broker", "2") == 2.0
    assert history.names("messages_in", "topic") == ["a", "b"]  # busiest first


def test_a_moved_leader_or_a_counter_reset_is_no_spike() -> None:
    history = ThroughputHistory()
    history.record(_offsets(0.0, {("a", 0): (1, 1000)}))
    history.record(_offsets(10.0, {("a", 0): (2, 1010)}))  # leader 1 -> 2
    assert history.latest("messages_in", "broker", "2") == 1.0
    assert history.latest("messages_in", "broker", "1") is None
    history.record(_offsets(20.0, {("a", 0): (2, 3)}))  # went down: zero, not negative
    assert history.series("messages_in", "topic", "a") == [(10.0, 1.0), (20.0, 0.0)]


def test_history_is_bounded_and_forgets_gone_topics() -> None:
    history = ThroughputHistory(max_points=3)
    for i in range(6):
        history.record(_offsets(float(i), {("a", 0): (1, i), ("gone", 0): (1, 0)} if i < 4
                                else {("a", 0): (1, i)}))
    assert len(history.series("messages_in", "topic", "a")) == 3
    assert history.series("messages_in", "topic", "gone") == []


def test_sections_chart_the_busiest_topics_only() -> None:
    history = ThroughputHistory()
    history.record(_offsets(0.0, {(f"t{i}", 0): (1, 0) for i in range(5)}))
    history.record(_offsets(1.0, {(f"t{i}", 0): (1, i) for i in range(5)}))
    [section] = throughput_sections(history, max_topics=2)
    assert (section.measure, section.brokers, section.topics, section.quiet_topics) == (
        "messages_in", ["1"], ["t4", "t3"], 3)


def test_metric_counters_are_read_per_topic() -> None:
    text = """# HELP kafka_server_brokertopicmetrics_bytesin Bytes in.
# TYPE kafka_server_brokertopicmetrics_bytesin counter
kafka_server_brokertopicmetrics_bytesin_total{topic="orders"} 1234.0
kafka_server_brokertopicmetrics_bytesin_created{topic="orders"} 1.7e9
# TYPE kafka_server_brokertopicmetrics_bytesout counter
kafka_server_brokertopicmetrics_bytesout_total{topic="orders"} 99.0
# TYPE kafka_server_replicamanager_leadercount gauge
kafka_server_replicamanager_leadercount 3.0
"""
    counters = parse_metric_counters(text, broker=2)
    assert counters["bytes_in"] == {(2, "orders"): Counter(2, "orders", 1234.0)}
    assert counters["bytes_out"] == {(2, "orders"): Counter(2, "orders", 99.0)}
    assert counters["messages_in"] == {}
