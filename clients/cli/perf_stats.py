"""The figures and output lines of the perf tools, as Kafka's ProducerPerformance and
ConsumerPerformance print them (pure: times are passed in, lines are returned)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

MB = 1024 * 1024
PRODUCER_REPORTING_INTERVAL_MS = 5000
MAX_LATENCY_SAMPLES = 500_000
CONSUMER_HEADER_TAIL = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
CONSUMER_HEADER = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, "
                   "nMsg.sec" + CONSUMER_HEADER_TAIL)
CONSUMER_DETAILED_HEADER = ("time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, "
                            "nMsg.sec" + CONSUMER_HEADER_TAIL)
DEFAULT_DATE_FORMAT = "yyyy-MM-dd HH:mm:ss:SSS"


class ThroughputPacer:
    """Paces sends to `per_second` records a second from `start_s` (a negative rate: no
    limit): record i goes no earlier than start + i / rate, so the average rate over any
    stretch stays at the target and a late start is caught up without a burst above it
    for longer than the lag."""

    def __init__(self, per_second: float, start_s: float) -> None:
        self.per_second = per_second
        self.start_s = start_s

    def delay(self, sent: int, now_s: float) -> float:
        """Seconds to wait before sending record number `sent` (counting from 0)."""
        if self.per_second <= 0:
            return 0.0 if self.per_second < 0 else math.inf
        return max(0.0, self.start_s + sent / self.per_second - now_s)


@dataclass
class ProducerStats:
    """ProducerPerformance's Stats: totals, a 5-second window and sampled latencies."""

    num_records: int
    start_ms: int
    steady_state: bool = False
    print_windows: bool = True
    sampling: int = field(init=False)
    latencies: list[int] = field(default_factory=list)
    iteration: int = 0
    count: int = 0
    bytes: int = 0
    total_latency: int = 0
    max_latency: int = 0
    window_start_ms: int = field(init=False)
    window_count: int = 0
    window_bytes: int = 0
    window_total_latency: int = 0
    window_max_latency: int = 0

    def __post_init__(self) -> None:
        self.sampling = max(1, self.num_records // max(1, min(self.num_records,
                                                              MAX_LATENCY_SAMPLES)))
        self.window_start_ms = self.start_ms

    def record(self, latency_ms: int, size: int, now_ms: int) -> list[str]:
        """Count one acknowledged record; the window line when 5 s have passed."""
        self.count += 1
        self.bytes += size
        self.total_latency += latency_ms
        self.max_latency = max(self.max_latency, latency_ms)
        self.window_count += 1
        self.window_bytes += size
        self.window_total_latency += latency_ms
        self.window_max_latency = max(self.window_max_latency, latency_ms)
        if self.iteration % self.sampling == 0:
            self.latencies.append(latency_ms)
        self.iteration += 1
        lines: list[str] = []
        if now_ms - self.window_start_ms >= PRODUCER_REPORTING_INTERVAL_MS:
            if self.steady_state and self.count == self.window_count:
                lines.append("In steady state.")
            if self.print_windows:
                lines.append(self.window_line(now_ms))
            self.window_start_ms = now_ms
            self.window_count = self.window_bytes = 0
            self.window_total_latency = self.window_max_latency = 0
        return lines

    def window_line(self, now_ms: int) -> str:
        elapsed = max(1, now_ms - self.window_start_ms)
        return (f"{self.window_count} records sent, "
                f"{1000.0 * self.window_count / elapsed:.1f} records/sec "
                f"({1000.0 * self.window_bytes / elapsed / MB:.2f} MB/sec), "
                f"{_ratio(self.window_total_latency, self.window_count):.1f} ms avg latency, "
                f"{float(self.window_max_latency):.1f} ms max latency.")

    def total_line(self, now_ms: int) -> str:
        elapsed = max(1, now_ms - self.start_ms)
        p50, p95, p99, p999 = percentiles(self.latencies, (0.5, 0.95, 0.99, 0.999))
        label = " steady state" if self.steady_state else ""
        return (f"{self.count}{label} records sent, {1000.0 * self.count / elapsed:f} "
                f"records/sec ({1000.0 * self.bytes / elapsed / MB:.2f} MB/sec), "
                f"{_ratio(self.total_latency, self.count):.2f} ms avg latency, "
                f"{float(self.max_latency):.2f} ms max latency, {p50} ms 50th, {p95} ms 95th, "
                f"{p99} ms 99th, {p999} ms 99.9th.")


def percentiles(samples: list[int], points: tuple[float, ...]) -> list[int]:
    """Kafka's nearest-rank percentiles of the sampled latencies (0 without samples)."""
    ordered = sorted(samples)
    if not ordered:
        return [0 for _ in points]
    return [ordered[min(len(ordered) - 1, int(p * len(ordered)))] for p in points]


def _ratio(total: float, count: int) -> float:
    return total / count if count else 0.0


def java_double(value: float, decimals: int = 4) -> str:
    """`%.Nf` as Java prints it, Infinity and NaN included (a zero fetch time)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return f"{value:.{decimals}f}"


def _divide(numerator: float, denominator: float) -> float:
    if denominator == 0:
        return math.nan if numerator == 0 else math.copysign(math.inf, numerator)
    return numerator / denominator


# SimpleDateFormat letters the perf tool's --date-format takes, as strftime pieces.
_DATE_PIECES = {"yyyy": "%Y", "yy": "%y", "MM": "%m", "dd": "%d", "HH": "%H", "mm": "%M",
                "ss": "%S"}


def format_time_ms(epoch_ms: int, pattern: str = DEFAULT_DATE_FORMAT) -> str:
    """`epoch_ms` in local time by a SimpleDateFormat pattern (yyyy yy MM dd HH mm ss SSS;
    other characters, and text in single quotes, are copied)."""
    local = time.localtime(epoch_ms / 1000)
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern[i] == "'":
            end = pattern.find("'", i + 1)
            end = len(pattern) if end < 0 else end
            out.append(pattern[i + 1:end] or "'")
            i = end + 1
            continue
        if pattern.startswith("SSS", i):
            out.append(f"{epoch_ms % 1000:03d}")
            i += 3
            continue
        for piece, directive in _DATE_PIECES.items():
            if pattern.startswith(piece, i):
                out.append(time.strftime(directive, local))
                i += len(piece)
                break
        else:
            out.append(pattern[i])
            i += 1
    return "".join(out)


def check_date_format(pattern: str) -> str | None:
    """Why `pattern` cannot be used, or None: letters outside the supported ones."""
    stripped = pattern
    for piece in ("yyyy", "SSS", "yy", "MM", "dd", "HH", "mm", "ss"):
        stripped = stripped.replace(piece, "")
    quoted = False
    for char in stripped:
        if char == "'":
            quoted = not quoted
        elif char.isalpha() and not quoted:
            return (f"the letter {char!r} is not supported (use yyyy, yy, MM, dd, HH, mm, ss "
                    "and SSS)")
    return None


def consumer_total_line(start_ms: int, end_ms: int, total_bytes: int, messages: int,
                        join_ms: int, date_format: str = DEFAULT_DATE_FORMAT) -> str:
    """ConsumerPerformance's final CSV values line."""
    elapsed_s = (end_ms - start_ms) / 1000
    fetch_ms = end_ms - start_ms - join_ms
    mb = total_bytes / MB
    return ", ".join([
        format_time_ms(start_ms, date_format), format_time_ms(end_ms, date_format),
        java_double(mb), java_double(_divide(mb, elapsed_s)), str(messages),
        java_double(_divide(messages, elapsed_s)), str(join_ms), str(fetch_ms),
        java_double(_divide(mb, fetch_ms / 1000)),
        java_double(_divide(messages, fetch_ms / 1000))])


def consumer_progress_line(bytes_read: int, last_bytes: int, messages: int, last_messages: int,
                           start_ms: int, end_ms: int, join_ms_this_round: int,
                           date_format: str = DEFAULT_DATE_FORMAT) -> str:
    """ConsumerPerformance's --show-detailed-stats line for one reporting interval."""
    elapsed_ms = end_ms - start_ms
    interval_mb = (bytes_read - last_bytes) / MB
    interval_messages = messages - last_messages
    fetch_ms = elapsed_ms - join_ms_this_round
    fetch_mb_rate = 0.0 if fetch_ms <= 0 else 1000.0 * interval_mb / fetch_ms
    fetch_msg_rate = 0.0 if fetch_ms <= 0 else 1000.0 * interval_messages / fetch_ms
    return ", ".join([
        format_time_ms(end_ms, date_format), "0", java_double(bytes_read / MB),
        java_double(_divide(1000.0 * interval_mb, elapsed_ms)), str(messages),
        java_double(_divide(1000.0 * interval_messages, elapsed_ms)),
        str(join_ms_this_round), str(fetch_ms), java_double(fetch_mb_rate),
        java_double(fetch_msg_rate)])


def metrics_lines(metrics: dict[str, float]) -> list[str]:
    """Kafka's `--print-metrics` table: a header, then `name : value` padded to the
    longest name."""
    width = max([len("Metric Name")] + [len(name) for name in metrics])
    lines = ["", f"{'Metric Name':<{width}}   Value"]
    lines += [f"{name:<{width}} : {value:.3f}" for name, value in sorted(metrics.items())]
    return lines
