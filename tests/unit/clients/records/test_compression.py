"""Compression codecs: round trips, Kafka's framings, bounded decompression."""

from __future__ import annotations

import gzip
import struct

import lz4.frame
import pytest

from clients.records import compression
from clients.records.errors import CorruptRecordError, UnsupportedCompressionError

SAMPLE = b"".join(b"record-%05d;" % i for i in range(5000)) + bytes(range(256))


@pytest.mark.parametrize("codec", compression.available_codecs())
def test_round_trip(codec: int) -> None:
    assert compression.decompress(codec, compression.compress(codec, SAMPLE)) == SAMPLE
    assert compression.decompress(codec, compression.compress(codec, b"")) == b""


def test_lz4_is_a_frame_of_independent_64k_blocks() -> None:
    data = compression.compress(compression.LZ4, SAMPLE)
    assert data[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic
    flags, block_descriptor = data[4], data[5]
    assert flags & 0x20, "blocks must be independent for Java's KafkaLZ4BlockInputStream"
    assert (block_descriptor >> 4) & 0x07 == 4  # 64 KiB max block size
    assert lz4.frame.decompress(data) == SAMPLE


def test_lz4_frames_written_by_other_settings_are_read() -> None:
    linked = lz4.frame.compress(SAMPLE, block_linked=True, content_checksum=True, store_size=True)
    assert compression.decompress(compression.LZ4, linked) == SAMPLE


def test_gzip_reads_stdlib_gzip_and_concatenated_members() -> None:
    data = gzip.compress(SAMPLE[:1000]) + gzip.compress(SAMPLE[1000:])
    assert compression.decompress(compression.GZIP, data) == SAMPLE


@pytest.mark.parametrize("codec", [compression.GZIP, compression.LZ4])
def test_decompression_bomb_is_capped(codec: int) -> None:
    bomb = compression.compress(codec, bytes(10 * 1024 * 1024))
    assert len(bomb) < 100_000
    with pytest.raises(CorruptRecordError, match="exceed"):
        compression.decompress(codec, bomb, max_size=1024 * 1024)
    assert len(compression.decompress(codec, bomb, max_size=10 * 1024 * 1024)) == 10 * 1024 * 1024


@pytest.mark.parametrize("codec", [compression.GZIP, compression.LZ4])
@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_damaged_input_raises_corrupt_record(codec: int, damage: str) -> None:
    data = compression.compress(codec, SAMPLE)
    bad = data[: len(data) // 2] if damage == "truncate" else b"\x00garbage" + data[8:]
    with pytest.raises(CorruptRecordError):
        compression.decompress(codec, bad)


def test_unknown_codec_is_unsupported() -> None:
    with pytest.raises(UnsupportedCompressionError):
        compression.decompress(6, b"x")
    with pytest.raises(UnsupportedCompressionError):
        compression.compress(7, b"x")


def test_codec_names_follow_compression_type() -> None:
    assert [compression.codec_from_name(n) for n in ("none", "gzip", "snappy", "lz4", "zstd")] == [
        0,
        1,
        2,
        3,
        4,
    ]
    with pytest.raises(UnsupportedCompressionError):
        compression.codec_from_name("brotli")


@pytest.mark.usefixtures("codec_packages_missing")
def test_missing_snappy_names_the_package() -> None:
    assert not compression.is_available(compression.SNAPPY)
    with pytest.raises(UnsupportedCompressionError, match="python-snappy"):
        compression.compress(compression.SNAPPY, SAMPLE)
    with pytest.raises(UnsupportedCompressionError, match="python-snappy"):
        compression.decompress(compression.SNAPPY, b"\x82SNAPPY\x00" + bytes(8))


@pytest.mark.usefixtures("codec_packages_missing")
def test_missing_zstd_names_the_package() -> None:
    assert not compression.is_available(compression.ZSTD)
    with pytest.raises(UnsupportedCompressionError, match="zstandard"):
        compression.decompress(compression.ZSTD, b"\x28\xb5\x2f\xfd")


def test_snappy_accepts_xerial_framing_and_raw_blocks() -> None:
    snappy = pytest.importorskip("snappy")
    xerial = compression.compress(compression.SNAPPY, SAMPLE)
    assert xerial.startswith(compression.XERIAL_MAGIC)
    assert compression.decompress(compression.SNAPPY, xerial) == SAMPLE
    assert compression.decompress(compression.SNAPPY, snappy.compress(SAMPLE)) == SAMPLE
    with pytest.raises(CorruptRecordError):
        compression.decompress(compression.SNAPPY, snappy.compress(SAMPLE), max_size=1000)
    truncated = xerial[:-10]
    with pytest.raises(CorruptRecordError):
        compression.decompress(compression.SNAPPY, truncated)
    lying = xerial[:16] + struct.pack(">i", 2**30) + xerial[20:]
    with pytest.raises(CorruptRecordError):
        compression.decompress(compression.SNAPPY, lying)


def test_zstd_round_trip_and_cap() -> None:
    pytest.importorskip("zstandard")
    data = compression.compress(compression.ZSTD, bytes(4 * 1024 * 1024))
    with pytest.raises(CorruptRecordError):
        compression.decompress(compression.ZSTD, data, max_size=1024)
    with pytest.raises(CorruptRecordError):
        compression.decompress(compression.ZSTD, b"\x28\xb5\x2f\xfd garbage")
