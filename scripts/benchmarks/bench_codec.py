"""Record-batch codec benchmark: prints one JSON line of throughput figures (MB/s = 10^6 B/s).

  encode_mb_s / decode_mb_s          full encode/decode of ~1 MiB batches of 100-byte values
  lz4_encode_mb_s / lz4_decode_mb_s  the same with lz4, per uncompressed byte
  fastpath_crc_mb_s                  header.iter_batches(verify_crc=True) over a buffer of them
  assign_offsets_mb_s                header.assign_offsets over the same buffer (leader append)
  raw_crc32c_mb_s                    crc32c.crc32c over the same buffer, same run
  fastpath_to_raw_crc_ratio          fastpath_crc_mb_s / raw_crc32c_mb_s (target >= 0.8)

Rates are the best of several timed rounds, to shrug off noise from a busy machine; the
ratio is the median over many back-to-back pairs of one fast-path pass and one raw CRC pass.
Options: --quick (smaller, for smoke tests).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Callable

import crc32c

from clients.records import compression
from clients.records.batch import Record, decode_batch, encode_batch
from clients.records.header import BATCH_HEADER_SIZE, assign_offsets, iter_batches
from clients.records.record import encode_record

QUICK = "--quick" in sys.argv[1:]
BATCH_BYTES = 1 << 20
VALUE_SIZE = 100
BUFFER_BATCHES = 4 if QUICK else 32
ROUND_SECONDS = 0.05 if QUICK else 0.3
ROUNDS = 2 if QUICK else 10
PAIR_SECONDS = 0.2 if QUICK else 4.0


def make_records() -> list[Record]:
    # Text-like values (compressible, as real payloads are), sized so the batch is ~1 MiB.
    template = b'{"user": %08d, "event": "page_view", "path": "/items/%06d", "ok": true, "pad": "'
    records: list[Record] = []
    size = BATCH_HEADER_SIZE
    while True:
        i = len(records)
        head = template % (i, i % 997)
        value = head + b"x" * (VALUE_SIZE - len(head) - 2) + b'"}'
        size += len(encode_record(i, i, None, value))
        if size > BATCH_BYTES:
            return records
        records.append(Record(None, 1_700_000_000_000 + i, None, value))


def measure(cases: dict[str, tuple[int, Callable[[], object]]]) -> dict[str, list[float]]:
    """MB/s of each case in each of ROUNDS rounds of about ROUND_SECONDS.

    Cases are interleaved round by round, in alternating order, so that rates compared with
    each other saw the same machine conditions (it may be shared with other work).
    """
    rates: dict[str, list[float]] = {name: [] for name in cases}
    names = list(cases)
    for round_number in range(ROUNDS):
        for name in names if round_number % 2 == 0 else reversed(names):
            nbytes, fn = cases[name]
            calls = 0
            start = time.perf_counter()
            while True:
                fn()
                calls += 1
                elapsed = time.perf_counter() - start
                if elapsed >= ROUND_SECONDS:
                    break
            rates[name].append(nbytes * calls / elapsed / 1e6)
    return rates


def paired_rates(
    nbytes: int, first: Callable[[], object], second: Callable[[], object]
) -> tuple[list[float], list[float]]:
    """MB/s of two functions run alternately, one call each per pair, for PAIR_SECONDS.

    Each pair runs within a few milliseconds, so the pair's ratio is fair even when the
    machine's load changes from second to second.
    """
    rates: tuple[list[float], list[float]] = ([], [])
    deadline = time.perf_counter() + PAIR_SECONDS
    while time.perf_counter() < deadline or len(rates[0]) < 3:
        for fn, out in ((first, rates[0]), (second, rates[1])):
            start = time.perf_counter()
            fn()
            out.append(nbytes / (time.perf_counter() - start) / 1e6)
    return rates


def consume_batches(buf: bytearray) -> None:
    for _ in iter_batches(buf, verify_crc=True):
        pass


def main() -> None:
    records = make_records()
    plain = encode_batch(records)
    lz4_batch = encode_batch(records, compression=compression.LZ4)
    buffer = bytearray(b"".join(
        encode_batch(records, base_offset=n * len(records)) for n in range(BUFFER_BATCHES)
    ))
    assert len(plain) <= BATCH_BYTES and decode_batch(plain).records[-1].value == records[-1].value

    codec = measure({
        "encode_mb_s": (len(plain), lambda: encode_batch(records)),
        "decode_mb_s": (len(plain), lambda: decode_batch(plain)),
        "lz4_encode_mb_s": (len(plain), lambda: encode_batch(records, compression=compression.LZ4)),
        "lz4_decode_mb_s": (len(plain), lambda: decode_batch(lz4_batch)),
    })
    crc = paired_rates(len(buffer), lambda: consume_batches(buffer), lambda: crc32c.crc32c(buffer))
    assign = measure({"assign_offsets_mb_s": (len(buffer), lambda: assign_offsets(buffer, 0, 1))})
    result: dict[str, float | int] = {
        "batch_bytes": len(plain),
        "records_per_batch": len(records),
        "value_bytes": VALUE_SIZE,
        "lz4_batch_bytes": len(lz4_batch),
        "buffer_bytes": len(buffer),
    }
    result.update({name: round(max(rates), 1) for name, rates in {**codec, **assign}.items()})
    result["fastpath_crc_mb_s"] = round(max(crc[0]), 1)
    result["raw_crc32c_mb_s"] = round(max(crc[1]), 1)
    result["fastpath_to_raw_crc_ratio"] = round(
        statistics.median(fast / raw for fast, raw in zip(*crc)), 3
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
