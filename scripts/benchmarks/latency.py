"""`scripts/bench --latency`: end-to-end latency, produce to consume, at a steady paced load.

A kcat producer reads 100-byte lines from a pipe that this process fills at a set rate, one
burst per millisecond; the first line of each burst starts with the clock reading
(nanoseconds) taken when it was written, the others are filler. A consumer process
(`scripts.benchmarks.latency_consumer`), positioned at the end of the topic (probe records, not
counted, are sent until it reads one), reports each fetched batch's arrival time with the
stamps in it, and this process takes each stamped record's latency as that arrival minus its
stamp (one monotonic clock for both processes). So every burst contributes one sample (1,000
a second) and the measuring side's cost per filler record is a copy in kcat and a list
comprehension in the consumer. Records written in the warm-up second are left out."""

from __future__ import annotations

import bisect
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import trio

from scripts.benchmarks.latency_consumer import STAMP
from scripts.benchmarks.native_load import PRODUCER_SETTINGS, settings_args
from scripts.benchmarks.node_cpu import cpu_seconds

PADDING = b"x" * (100 - STAMP)
FILLER = b"x" * 100 + b"\n"
REPO_ROOT = Path(__file__).resolve().parents[2]
BUCKETS_MS = (0.5, 1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000)


def stamped(clock_ns: int) -> bytes:
    """A 100-byte line (and its newline) whose value starts with the clock reading."""
    return b"%019d" % clock_ns + PADDING + b"\n"


def percentile(weighted: list[tuple[int, int]], total: int, fraction: float) -> float | None:
    """The `fraction` quantile (ms) of sorted (latency ns, count) pairs: the record at index
    int(total * fraction) in latency order, as `scripts.benchmarks.cluster.percentiles_ms` picks."""
    if not total:
        return None
    rank, seen = min(int(total * fraction), total - 1), 0
    for latency, count in weighted:
        seen += count
        if seen > rank:
            return round(latency / 1e6, 2)
    return round(weighted[-1][0] / 1e6, 2)


def used_since(before: float | None, after: float | None) -> float | None:
    return round(after - before, 2) if before is not None and after is not None else None


def histogram(weighted: list[tuple[int, int]]) -> dict[str, int]:
    """Record counts per bucket: "<=B" for each bound B in ms, then ">" the largest."""
    counts = [0] * (len(BUCKETS_MS) + 1)
    for latency, count in weighted:
        counts[bisect.bisect_left(BUCKETS_MS, latency / 1e6)] += count
    labels = [f"<={b}ms" for b in BUCKETS_MS] + [f">{BUCKETS_MS[-1]}ms"]
    return dict(zip(labels, counts))


def render(hist: dict[str, int]) -> str:
    """The histogram as text bars, one line per bucket."""
    total = sum(hist.values()) or 1
    width = max(len(label) for label in hist)
    return "\n".join(f"{label:>{width}} {count:>9} {100 * count / total:5.1f}% "
                     f"{'#' * round(50 * count / total)}" for label, count in hist.items())


async def paced_run(kcat: str, bootstrap: str, topic: str, rate: int, seconds: float,
                    linger_ms: int, warm_up_s: float = 1.0) -> dict[str, Any]:
    producer_settings = {**PRODUCER_SETTINGS, "acks": "all", "enable.idempotence": "true",
                         "linger.ms": str(linger_ms)}
    consumer = await trio.lowlevel.open_process(
        [sys.executable, "-m", "scripts.benchmarks.latency_consumer", bootstrap, topic],
        stdout=subprocess.PIPE, cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    producer = await trio.lowlevel.open_process(
        [kcat, "-P", "-q", "-b", bootstrap, "-t", topic, "-p", "0",
         *settings_args(producer_settings)], stdin=subprocess.PIPE)
    latencies: Counter[int] = Counter()
    # CPU seconds the measuring side used while pacing: kcat, the consumer and this process.
    load_cpu: dict[str, float | None] = {"own": None, "producer": None, "consumer": None}
    state = {"counted": 0, "stamped": 0, "seen": 0, "sent": 0}
    # Until the pacing starts, nothing read counts: probes (stamped 0) and warm-up records
    # come before the cut.
    cut = [time.perf_counter_ns() + 10**15]

    async def consumer_positioned() -> None:
        """Probe records until the consumer reads one, so that it reads from before the
        measured records whatever its start-up took."""
        with trio.fail_after(30):
            while not state["seen"]:
                await producer.stdin.send_all(stamped(0))
                await trio.sleep(0.05)

    async def pace() -> None:
        await consumer_positioned()
        sent = 0
        started = time.perf_counter_ns()
        load_cpu.update(own=time.process_time(), producer=cpu_seconds(producer.pid),
                        consumer=cpu_seconds(consumer.pid))
        cut[0] = started + int(warm_up_s * 1e9)
        end = started + int((warm_up_s + seconds) * 1e9)
        while True:
            now = time.perf_counter_ns()
            if now >= end:
                break
            due = int((now - started) * rate / 1e9) - sent
            if due > 0:
                await producer.stdin.send_all(stamped(now) + FILLER * (due - 1))
                sent += due
                if now >= cut[0]:
                    state["sent"] += due
                    state["stamped"] += 1
            await trio.sleep(0.001)
        load_cpu["producer"] = used_since(load_cpu["producer"], cpu_seconds(producer.pid))
        await producer.stdin.aclose()

    async def read() -> None:
        rest = b""
        async for chunk in consumer.stdout:
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            for line in lines:
                arrived, *stamps = line.split()
                state["seen"] += len(stamps)
                for stamp in stamps:
                    sent_at = int(stamp)
                    if sent_at >= cut[0]:
                        latencies[int(arrived) - sent_at] += 1
                        state["counted"] += 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        await pace()
        with trio.move_on_after(30):
            await producer.wait()
            while state["counted"] < state["stamped"]:
                await trio.sleep(0.05)
        nursery.cancel_scope.cancel()
    load_cpu["consumer"] = used_since(load_cpu["consumer"], cpu_seconds(consumer.pid))
    load_cpu["own"] = used_since(load_cpu["own"], time.process_time())
    for process in (consumer, producer):
        if process.returncode is None:
            process.kill()
        await process.wait()
    weighted = sorted(latencies.items())
    total = state["counted"]
    hist = histogram(weighted)
    return {"rate_records_per_s": rate, "seconds": seconds, "records_sent": state["sent"],
            "stamped_records": state["stamped"], "records_measured": total,
            "p50_ms": percentile(weighted, total, 0.50),
            "p99_ms": percentile(weighted, total, 0.99),
            "p999_ms": percentile(weighted, total, 0.999),
            "max_ms": round(weighted[-1][0] / 1e6, 2) if weighted else None,
            "histogram": hist, "load_cpu_s": load_cpu}


def latency_bench(kcat: str, bootstrap: str, topic: str, rate: int, seconds: float,
                  linger_ms: int) -> dict[str, Any]:
    try:
        return trio.run(paced_run, kcat, bootstrap, topic, rate, seconds, linger_ms)
    except trio.TooSlowError:
        raise SystemExit("latency: the consumer read no probe record within 30 s") from None
    except (trio.BrokenResourceError, BrokenPipeError):
        raise SystemExit("latency: the kcat producer exited early") from None
