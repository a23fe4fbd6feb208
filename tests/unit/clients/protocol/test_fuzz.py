"""Mutation fuzzing: malformed frames only ever raise ProtocolError, and fast."""

from __future__ import annotations

import random
import struct
import time

from clients.protocol import (
    APIS,
    ApiKey,
    ProtocolError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from tests.unit.clients.protocol.schema_values import random_body

SEED = 20240611
MUTATIONS = 100_000
SLOWEST_ALLOWED_S = 0.5

# Values written over length fields: huge, negative, just-past-the-end.
_LENGTH_BOMBS = [
    struct.pack(">i", 0x7FFFFFFF), struct.pack(">i", -2), struct.pack(">i", -(2**31)),
    struct.pack(">h", 0x7FFF), struct.pack(">h", -2), struct.pack(">i", 1 << 20),
    b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\xff\xff", b"\x80\x80\x80\x80\x80\x80",
]


def _seed_frames(rng: random.Random) -> list[tuple[ApiKey, int, bool, bytes]]:
    frames = []
    for key, api in APIS.items():
        for version in range(api.versions[0], api.versions[1] + 1):
            for request in (True, False):
                fields = api.request if request else api.response
                for _ in range(2):
                    body = random_body(fields, version, rng)
                    if request:
                        frame = encode_request(key, version, rng.randint(0, 1000), "fuzz", body)
                    else:
                        frame = encode_response(key, version, rng.randint(0, 1000), body)
                    frames.append((key, version, request, frame))
    return frames


def _mutate(frame: bytes, rng: random.Random) -> bytes:
    data = bytearray(frame)
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(5)
        pos = rng.randrange(len(data) + 1)
        if kind == 0 and data:
            data[min(pos, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif kind == 1:
            del data[pos:]
        elif kind == 2:
            data[pos:pos] = rng.randbytes(rng.randint(1, 8))
        elif kind == 3:
            bomb = rng.choice(_LENGTH_BOMBS)
            data[pos:pos + len(bomb)] = bomb
        elif data:
            data[min(pos, len(data) - 1)] = rng.choice([0x00, 0x7F, 0x80, 0xFF])
    return bytes(data)


def test_mutated_frames_raise_only_protocol_error() -> None:
    rng = random.Random(SEED)
    seeds = _seed_frames(rng)
    assert len(seeds) > 500
    slowest = 0.0
    rejected = 0
    for _ in range(MUTATIONS):
        key, version, request, frame = rng.choice(seeds)
        mutated = _mutate(frame, rng)
        started = time.perf_counter()
        try:
            if request:
                decode_request(mutated)
            else:
                decode_response(key, version, mutated)
        except ProtocolError:
            rejected += 1
        slowest = max(slowest, time.perf_counter() - started)
    assert slowest < SLOWEST_ALLOWED_S
    # Most mutations must actually be caught, or the fuzzer is not reaching the decoder.
    assert rejected > MUTATIONS // 3
