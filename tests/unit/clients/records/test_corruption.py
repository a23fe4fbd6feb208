"""Hostile input: decoding raises only RecordsError subclasses and stays bounded."""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clients.records import compression
from clients.records.batch import Record, decode_batch, encode_batch, iter_record_batches
from clients.records.control import decode_control_record
from clients.records.errors import CorruptRecordError, RecordsError
from clients.records.header import BATCH_HEADER_SIZE, compute_crc, parse_header
from clients.varint import encode_unsigned_varint, encode_varint

MUTATIONS_PER_SEED_BATCH = 1000


def fix_crc(buf: bytearray) -> bytearray:
    """Recompute the CRC so the mutation reaches the record parser."""
    try:
        header = parse_header(buf)
    except RecordsError:
        return buf
    if header.size <= len(buf):
        struct.pack_into(">I", buf, 17, compute_crc(buf, 0, header))
    return buf


def seed_batches() -> list[bytes]:
    records = [
        Record(None, 1_000 + i, b"key-%d" % i if i % 3 else None, b"value" * i, (("h", b"x"), ("n", None)))
        for i in range(12)
    ]
    return [
        encode_batch(records, base_offset=77, producer_id=5, producer_epoch=1, base_sequence=0),
        encode_batch(records, compression=compression.GZIP),
        encode_batch(records, compression=compression.LZ4),
    ]


def mutate(rng: random.Random, buf: bytes) -> bytearray:
    out = bytearray(buf)
    kind = rng.randrange(5)
    if kind == 0:  # flip some bytes
        for _ in range(rng.randint(1, 4)):
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    elif kind == 1:  # random byte values
        for _ in range(rng.randint(1, 4)):
            out[rng.randrange(len(out))] = rng.randrange(256)
    elif kind == 2:  # truncate
        del out[rng.randrange(len(out)) :]
    elif kind == 3:  # insert garbage into the records section
        at = rng.randrange(BATCH_HEADER_SIZE, len(out))
        out[at:at] = rng.randbytes(rng.randint(1, 8))
    else:  # a maximal varint somewhere in the records section
        at = rng.randrange(BATCH_HEADER_SIZE, len(out) - 1)
        out[at : at + 5] = rng.choice([b"\xff\xff\xff\xff\x0f", b"\xfe\xff\xff\xff\x0f", b"\xff" * 5])
    if rng.random() < 0.7:
        fix_crc(out)
    return out


def decode_everything(buf: bytes | bytearray) -> None:
    for batch in iter_record_batches(buf, verify_crc=False):
        if batch.header.is_control:
            for record in batch.records:
                decode_control_record(record)


@pytest.mark.parametrize("seed_index", range(3))
def test_random_mutations_raise_only_records_errors(seed_index: int) -> None:
    seed = seed_batches()[seed_index]
    rng = random.Random(seed_index)
    failures = 0
    for _ in range(MUTATIONS_PER_SEED_BATCH):
        buf = mutate(rng, seed)
        try:
            decode_everything(buf)
        except RecordsError:
            failures += 1
    assert failures > MUTATIONS_PER_SEED_BATCH // 4  # the mutations really do break batches


def test_every_truncation_of_a_batch_is_corrupt() -> None:
    buf = seed_batches()[0]
    for end in range(1, len(buf)):
        with pytest.raises(CorruptRecordError):
            decode_batch(buf[:end])


def test_every_single_bit_flip_fails_the_crc() -> None:
    buf = seed_batches()[2]
    for i in range(16, len(buf)):  # from the magic on: base offset and epoch are outside the CRC
        if i == 16:
            continue  # magic changes are rejected before the CRC
        bad = bytearray(buf)
        bad[i] ^= 0x10
        with pytest.raises(CorruptRecordError):
            decode_batch(bad)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_records_section_raises_only_records_errors(section: bytes) -> None:
    header = encode_batch([], last_offset_delta=3)[:BATCH_HEADER_SIZE]
    buf = bytearray(header + section)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    struct.pack_into(">i", buf, 57, 4)  # records_count
    try:
        decode_batch(fix_crc(buf))
    except RecordsError:
        pass


def craft(section: bytes, records_count: int = 1, attributes: int = 0) -> bytearray:
    buf = bytearray(encode_batch([], last_offset_delta=0)[:BATCH_HEADER_SIZE] + section)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    struct.pack_into(">h", buf, 21, attributes)
    struct.pack_into(">i", buf, 57, records_count)
    return fix_crc(buf)


def record_body(key_length: bytes, rest: bytes = b"") -> bytes:
    body = b"\x00" + encode_varint(0) + encode_varint(0) + key_length + rest
    return encode_varint(len(body)) + body


@pytest.mark.parametrize(
    "section, records_count",
    [
        (b"", 2**31 - 1),  # claims billions of records, holds none
        (encode_varint(2**31 - 1) + b"\x00" * 10, 1),  # huge record length
        (record_body(encode_varint(2**31 - 1)), 1),  # huge key length
        (record_body(encode_varint(-2)), 1),  # negative key length
        (record_body(encode_varint(-1), encode_varint(-1) + encode_varint(2**31 - 1)), 1),
        (record_body(encode_varint(-1), encode_varint(-1) + encode_varint(-5)), 1),
        (record_body(b"\xff\xff\xff\xff\xff\x01"), 1),  # varint too long
        (record_body(b"\xff\xff\xff\xff\x7f"), 1),  # varint overflows int32
        (encode_unsigned_varint(2**40), 1),
        (record_body(encode_varint(-1), encode_varint(-1) + b"\x00") + b"\x00", 1),  # leftover
        (record_body(encode_varint(-1), encode_varint(-1) + b"\x00"), 2),  # missing record
    ],
)
def test_crafted_lengths_are_corrupt(section: bytes, records_count: int) -> None:
    with pytest.raises(CorruptRecordError):
        decode_batch(craft(section, records_count))


def test_invalid_utf8_header_key_is_corrupt() -> None:
    # null value, one header whose one-byte key is 0xff, null header value
    rest = encode_varint(-1) + encode_varint(1) + encode_varint(1) + b"\xff" + encode_varint(-1)
    with pytest.raises(CorruptRecordError, match="UTF-8"):
        decode_batch(craft(record_body(encode_varint(-1), rest)))


def test_compressed_bomb_batch_is_refused() -> None:
    bomb = compression.compress(compression.LZ4, bytes(8 * 1024 * 1024))
    buf = craft(bomb, records_count=1, attributes=compression.LZ4)
    with pytest.raises(CorruptRecordError, match="exceed"):
        decode_batch(buf, max_decompressed_size=1024 * 1024)
