"""The perf tools' figures and lines (clients/cli/perf_stats.py), as Kafka's tools print them."""

from __future__ import annotations

import math

from clients.cli.perf_stats import (
    ProducerStats,
    ThroughputPacer,
    check_date_format,
    consumer_total_line,
    format_time_ms,
    java_double,
    percentiles,
)


def test_pacer_holds_the_rate_and_catches_up_without_running_ahead() -> None:
    pacer = ThroughputPacer(100, start_s=10.0)
    assert pacer.delay(0, 10.0) == 0.0
    assert math.isclose(pacer.delay(50, 10.2), 0.3)  # record 50 is due at 10.5 s
    assert pacer.delay(50, 11.0) == 0.0  # behind: no wait
    assert ThroughputPacer(-1, 0.0).delay(10**6, 0.0) == 0.0


def test_window_line_after_five_seconds_and_total_line_with_percentiles() -> None:
    stats = ProducerStats(num_records=4, start_ms=0)
    assert stats.record(10, 1000, 1000) == []
    assert stats.record(30, 1000, 2000) == []
    assert stats.record(20, 1000, 5000) == [
        "3 records sent, 0.6 records/sec (0.00 MB/sec), 20.0 ms avg latency, "
        "30.0 ms max latency."]
    stats.record(40, 1000, 6000)
    assert stats.total_line(8000) == (
        "4 records sent, 0.500000 records/sec (0.00 MB/sec), 25.00 ms avg latency, "
        "40.00 ms max latency, 30 ms 50th, 40 ms 95th, 40 ms 99th, 40 ms 99.9th.")


def test_latencies_are_sampled_beyond_half_a_million_records() -> None:
    stats = ProducerStats(num_records=2_000_000, start_ms=0)
    assert stats.sampling == 4
    for i in range(8):
        stats.record(i, 1, 0)
    assert stats.latencies == [0, 4]
    assert percentiles([5, 1, 3, 2, 4], (0.5, 0.999)) == [3, 5]


def test_consumer_values_line_and_a_zero_fetch_time() -> None:
    line = consumer_total_line(0, 2000, 2 * 1024 * 1024, 100, 1000, "'t'ss")
    assert line == ("t00, t02, 2.0000, 1.0000, 100, 50.0000, 1000, 1000, 2.0000, 100.0000")
    assert consumer_total_line(0, 1000, 0, 0, 1000, "ss").endswith("0, 1000, 0, NaN, NaN")
    assert java_double(math.inf) == "Infinity"


def test_date_format_letters() -> None:
    assert format_time_ms(1234, "SSS") == "234"
    assert check_date_format("yyyy-MM-dd HH:mm:ss:SSS") is None
    assert "'E'" in (check_date_format("EEE yyyy") or "")
