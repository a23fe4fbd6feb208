"""`scripts/bench-log`: the partition log's append against raw `os.write` of the same bytes
(and against raw writes into blocks reserved the way the log reserves them), reads from the
page cache and index lookups. The script's header says how the rounds are run."""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.log.block_reservation import BlockReservation
from broker.log.config import LogConfig
from broker.log.partition_log import PartitionLog
from broker.log.results import UpperBound
from clients.records.batch import encode_batch
from clients.records.record import Record

MIB = 1024 * 1024
POOL = 16
NOW_MS = 1_700_000_000_000


@dataclass(frozen=True)
class Plan:
    """How much each part writes: `QUICK` is a smoke run for the tests, not a measurement."""

    batches_per_round: int = 32
    rounds: int = 15
    lookup_batches: int = 20_000
    read_batches: int = 64


QUICK = Plan(batches_per_round=4, rounds=3, lookup_batches=500, read_batches=8)


def big_batch() -> bytes:
    """One uncompressed batch of just under 1 MiB (1030 records of 1000 random bytes)."""
    value = os.urandom(1000)
    records = [Record(None, NOW_MS, b"k%d" % i, value) for i in range(1030)]
    return encode_batch(records)


def write_all(fd: int, data: bytearray) -> None:
    view = memoryview(data)
    written = 0
    while written < len(view):
        written += os.write(fd, view[written:])


def receive(buf: bytearray, template: bytes | None) -> None:
    """Untimed: refill ``buf`` as a socket read would, leaving it in the CPU caches."""
    if template is not None:
        buf[:] = template


def timed_raw(plan: Plan, path: Path, pool: list[bytearray], template: bytes | None, *,
              reserved: bool = False) -> float:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    blocks = BlockReservation(fd) if reserved else None
    size = 0

    def write(buf: bytearray) -> None:
        nonlocal size
        if blocks is not None:
            blocks.ahead_of(size, len(buf), LogConfig().segment_bytes)
        write_all(fd, buf)
        size += len(buf)

    write(pool[-1])  # untimed, like the log's first append below
    elapsed = 0.0
    for n in range(plan.batches_per_round):
        buf = pool[n % POOL]
        receive(buf, template)
        start = time.perf_counter()
        write(buf)
        elapsed += time.perf_counter() - start
    os.close(fd)
    return elapsed


def timed_log(plan: Plan, directory: Path, pool: list[bytearray], template: bytes | None
              ) -> tuple[float, int]:
    log = PartitionLog(directory, "bench", 0, LogConfig(), now_ms=NOW_MS)
    # Untimed: the first append of a leader epoch fsyncs leader-epoch-checkpoint, a
    # once-per-epoch cost that is not the append path being measured.
    log.append_as_leader(pool[-1], 1, now_ms=NOW_MS)
    elapsed = 0.0
    for n in range(plan.batches_per_round):
        buf = pool[n % POOL]
        receive(buf, template)
        start = time.perf_counter()
        log.append_as_leader(buf, 1, now_ms=NOW_MS)
        elapsed += time.perf_counter() - start
    size = log.active_segment.size
    log.close()
    return elapsed, size


def one_round(plan: Plan, root: Path, round_no: int, raw_pool: list[bytearray],
              log_pool: list[bytearray], template: bytes | None) -> dict[str, float]:
    """Seconds for `plan.batches_per_round` batches by each leg: raw, raw into reserved
    blocks, log append. The order rotates from round to round."""
    raw_path = root / f"raw-{round_no}.bin"
    reserved_path = root / f"reserved-{round_no}.bin"
    log_dir = root / f"bench-{round_no}"
    sizes: list[int] = []

    def log_leg() -> float:
        elapsed, size = timed_log(plan, log_dir, log_pool, template)
        sizes.append(size)
        return elapsed

    legs = {
        "raw": lambda: timed_raw(plan, raw_path, raw_pool, template),
        "reserved": lambda: timed_raw(plan, reserved_path, raw_pool, template, reserved=True),
        "append": log_leg,
    }
    names = list(legs)
    turn = round_no % len(names)
    times = {name: legs[name]() for name in names[turn:] + names[:turn]}
    assert sizes[0] == os.stat(raw_path).st_size == os.stat(reserved_path).st_size, \
        "all wrote the same bytes"
    raw_path.unlink()
    reserved_path.unlink()
    shutil.rmtree(log_dir)
    return times


def append_figures(plan: Plan, root: Path, template: bytes, *, received: bool
                   ) -> dict[str, float]:
    raw_pool = [bytearray(template) for _ in range(POOL)]
    log_pool = [bytearray(template) for _ in range(POOL)]
    fill = template if received else None
    one_round(plan, root, -1, raw_pool, log_pool, fill)  # warm-up, not reported
    rounds = [one_round(plan, root, round_no, raw_pool, log_pool, fill)
              for round_no in range(plan.rounds)]
    mb = plan.batches_per_round * len(template) / 1e6

    def leg(name: str) -> list[float]:
        return [times[name] for times in rounds]

    def ratios(name: str) -> list[float]:
        return [times[name] / times["append"] for times in rounds]

    return {
        "append_mb_per_s": round(mb / statistics.median(leg("append")), 1),
        "append_mb_per_s_best": round(mb / min(leg("append")), 1),
        "raw_write_mb_per_s": round(mb / statistics.median(leg("raw")), 1),
        "raw_write_mb_per_s_best": round(mb / min(leg("raw")), 1),
        "raw_reserved_write_mb_per_s": round(mb / statistics.median(leg("reserved")), 1),
        "append_vs_raw": round(statistics.median(ratios("raw")), 3),
        "append_vs_raw_best_round": round(max(ratios("raw")), 3),
        "append_vs_raw_of_bests": round(min(leg("raw")) / min(leg("append")), 3),
        "append_vs_raw_reserved": round(statistics.median(ratios("reserved")), 3),
    }


def bench_appends(plan: Plan, root: Path) -> dict[str, Any]:
    """Main figures: each batch freshly received (in cache), as on the produce path. The
    ``cold_`` figures rotate a 16 MiB pool instead, so the CRC pass reads from memory."""
    template = big_batch()
    hot = append_figures(plan, root, template, received=True)
    cold = append_figures(plan, root, template, received=False)
    return {
        "batch_bytes": len(template),
        "rounds": plan.rounds,
        "batches_per_round": plan.batches_per_round,
        **hot,
        **{f"cold_{key}": value for key, value in cold.items()},
    }


def bench_reads(plan: Plan, root: Path) -> dict[str, float]:
    """Read a log of `plan.read_batches` batches back from the page cache, batch range by
    batch range."""
    template = big_batch()
    log = PartitionLog(root / "read-0", "read", 0, LogConfig(), now_ms=NOW_MS)
    for _ in range(plan.read_batches):
        log.append_as_leader(bytearray(template), 1, now_ms=NOW_MS)
    log.update_high_watermark(log.log_end_offset)
    samples = []
    for _ in range(3):
        start = time.perf_counter()
        offset, read_bytes = 0, 0
        while offset < log.log_end_offset:
            data = log.read(offset, MIB, UpperBound.HW).read_bytes()
            read_bytes += len(data)
            offset = int.from_bytes(data[:8], "big") + int.from_bytes(data[23:27], "big") + 1
        samples.append(read_bytes / 1e6 / (time.perf_counter() - start))
    log.close()
    return {"read_mb_per_s": round(statistics.median(samples), 1)}


def bench_lookups(plan: Plan, root: Path) -> dict[str, float]:
    log = PartitionLog(root / "small-0", "small", 0, LogConfig(), now_ms=NOW_MS)
    template = encode_batch([Record(None, NOW_MS, b"k", os.urandom(4000))])
    for _ in range(plan.lookup_batches):
        log.append_as_leader(bytearray(template), 1, now_ms=NOW_MS)
    log.update_high_watermark(log.log_end_offset)
    index = log.active_segment.offset_index
    offsets = [random.randrange(log.log_end_offset) for _ in range(plan.lookup_batches)]
    start = time.perf_counter()
    for offset in offsets:
        index.lookup(offset)
    index_us = (time.perf_counter() - start) / len(offsets) * 1e6
    samples = []
    for offset in offsets[:5000]:
        t = time.perf_counter()
        log.read(offset, 1, UpperBound.HW)
        samples.append((time.perf_counter() - t) * 1e6)
    log.close()
    return {
        "index_entries": index.entries,
        "index_lookup_us": round(index_us, 2),
        "read_offset_lookup_p50_us": round(statistics.median(samples), 1),
    }


def main(argv: list[str] | None = None) -> None:
    """One JSON line of figures; `--quick` among the arguments makes a smoke run (any other
    argument is ignored). Scratch files go under $BENCH_DIR when it is set."""
    arguments = sys.argv[1:] if argv is None else argv
    plan = QUICK if "--quick" in arguments else Plan()
    with tempfile.TemporaryDirectory(prefix="bench-log-",
                                     dir=os.environ.get("BENCH_DIR")) as tmp:
        root = Path(tmp)
        result = {**bench_appends(plan, root), **bench_reads(plan, root),
                  **bench_lookups(plan, root)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
