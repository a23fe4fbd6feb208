"""Absurd, negative and past-the-end lengths fail fast, with ProtocolError, allocating little."""

from __future__ import annotations

import struct
import time
import tracemalloc

import pytest

from clients.protocol import ProtocolError, decode_request

HUGE_UVARINT = b"\xff\xff\xff\xff\x0f"  # 2**32 - 1: the largest compact length
PEAK_ALLOWED = 64 * 1024

# Produce v9 (flexible: compact types) and v8 (plain types), with null transactional id,
# acks -1 and a 1 s timeout.
_V9 = struct.pack(">hhih", 0, 9, 1, -1) + b"\x00" + b"\x00" + struct.pack(">hi", -1, 1000)
_V8 = struct.pack(">hhih", 0, 8, 1, -1) + struct.pack(">hhi", -1, -1, 1000)
_V9_ONE_PARTITION = _V9 + b"\x02" + b"\x02t" + b"\x02" + struct.pack(">i", 0)
_V8_ONE_PARTITION = _V8 + struct.pack(">ih", 1, 1) + b"t" + struct.pack(">ii", 1, 0)
# The same prefixes completed: empty records, then the three levels of empty tagged fields.
VALID_V9 = _V9_ONE_PARTITION + b"\x01" + b"\x00" + b"\x00" + b"\x00"
VALID_V8 = _V8_ONE_PARTITION + struct.pack(">i", -1)

FRAMES = {
    "compact array of 2**32-2 topics": _V9 + HUGE_UVARINT + b"\x00" * 16,
    "compact string of 2**32-2 bytes": struct.pack(">hhih", 0, 9, 1, -1) + b"\x00" + HUGE_UVARINT + b"\x00" * 16,
    "compact records of 2**32-2 bytes": _V9_ONE_PARTITION + HUGE_UVARINT + b"\x00" * 16,
    "plain array of 2**31-1 topics": _V8 + struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 16,
    "plain array of -2 topics": _V8 + struct.pack(">i", -2) + b"\x00" * 16,
    "plain records of 2**31-1 bytes": _V8_ONE_PARTITION + struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 16,
    "plain records of -2 bytes": _V8_ONE_PARTITION + struct.pack(">i", -2) + b"\x00" * 16,
    "plain string of -5 bytes": _V8 + struct.pack(">ih", 1, -5) + b"\x00" * 16,
    "header tagged field of 2**32-1 bytes": struct.pack(">hhih", 0, 9, 1, -1) + b"\x01\x00" + HUGE_UVARINT,
    "six-byte varint": struct.pack(">hhih", 0, 9, 1, -1) + b"\x00" + b"\x80" * 6,
    "truncated varint": struct.pack(">hhih", 0, 9, 1, -1) + b"\x00" + b"\x80",
    "client id past the end": struct.pack(">hhih", 0, 9, 1, 100) + b"abc",
}


def test_the_frames_are_well_formed_up_to_the_bad_length() -> None:
    # The prefixes must be valid, or the cases below would fail for the wrong reason.
    for frame in (VALID_V9, VALID_V8):
        [topic] = decode_request(frame).body.topic_data
        assert topic.name == "t" and topic.partition_data[0].index == 0


@pytest.mark.parametrize("frame", list(FRAMES.values()), ids=list(FRAMES))
def test_hostile_length_raises_protocol_error_without_allocating(frame: bytes) -> None:
    for valid in (VALID_V9, VALID_V8):
        decode_request(valid)  # compile the schemas first: only the decode is measured
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(ProtocolError):
            decode_request(frame)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 0.5
    assert peak < PEAK_ALLOWED
