"""Record-batch compression codecs, by Kafka's attribute codes.

gzip comes from the standard library and lz4 from the ``lz4`` package (LZ4 frame format,
64 KiB independent blocks, as Kafka writes it). snappy (python-snappy or cramjam) and zstd
(zstandard) are used when their packages import; otherwise the codec raises
UnsupportedCompressionError naming the package.

Every decompressor is bounded: output beyond ``max_size`` bytes raises CorruptRecordError
instead of being allocated, so a small hostile batch cannot exhaust memory.
"""

from __future__ import annotations

import importlib
import struct
import zlib
from types import ModuleType
from typing import Callable

import lz4.frame as _lz4frame

from clients.records.errors import CorruptRecordError, UnsupportedCompressionError
from clients.varint import VarintError, decode_unsigned_varint

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

CODEC_NAMES: dict[int, str] = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
CODEC_IDS: dict[str, int] = {name: codec for codec, name in CODEC_NAMES.items()}

# Generous next to message.max.bytes (1 MiB) yet small enough that a bomb cannot hurt.
DEFAULT_MAX_DECOMPRESSED_SIZE = 64 * 1024 * 1024

Buffer = bytes | bytearray | memoryview

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_XERIAL_VERSION = 1
_XERIAL_BLOCK_SIZE = 32 * 1024  # the xerial library's default, which Kafka's Java producer uses
_INT32 = struct.Struct(">i")
_ZSTD_LEVEL = 3  # Kafka's default compression.zstd.level
_GZIP_LEVEL = 6  # what Kafka's default compression.gzip.level (-1) means to zlib


def _lz4_level(level: int | None) -> int:
    """lz4 frame level for a Kafka compression.lz4.level: 1-2 stay in fast mode (the
    producer's default), 3 and up use LZ4 HC, and the frame library stops at 16."""
    if level is None or level < _lz4frame.COMPRESSIONLEVEL_MINHC:
        return 0
    return min(level, _lz4frame.COMPRESSIONLEVEL_MAX)


def codec_from_name(name: str) -> int:
    """Attribute code for a ``compression.type`` value such as ``"lz4"``."""
    try:
        return CODEC_IDS[name.lower()]
    except KeyError:
        raise UnsupportedCompressionError(f"unknown compression type {name!r}") from None


def _optional_module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


class _Snappy:
    """Raw snappy block codec over python-snappy or cramjam, whichever imports."""

    def __init__(self) -> None:
        snappy = _optional_module("snappy")
        if snappy is not None and hasattr(snappy, "compress"):
            self.compress_raw: Callable[[bytes], bytes] = snappy.compress
            self.decompress_raw: Callable[[bytes], bytes] = snappy.uncompress
            return
        cramjam = _optional_module("cramjam")
        if cramjam is None:
            raise UnsupportedCompressionError("snappy compression needs the python-snappy package")
        self.compress_raw = lambda data: bytes(cramjam.snappy.compress_raw(data))
        self.decompress_raw = lambda data: bytes(cramjam.snappy.decompress_raw(data))


_snappy: _Snappy | None = None
_zstd: ModuleType | None = None


def _get_snappy() -> _Snappy:
    global _snappy
    if _snappy is None:
        _snappy = _Snappy()
    return _snappy


def _get_zstd() -> ModuleType:
    global _zstd
    if _zstd is None:
        _zstd = _optional_module("zstandard")
        if _zstd is None:
            raise UnsupportedCompressionError("zstd compression needs the zstandard package")
    return _zstd


def unavailable_reason(codec: int) -> str | None:
    """Why ``codec`` cannot be used in this process (a missing package), or None."""
    try:
        if codec == SNAPPY:
            _get_snappy()
        elif codec == ZSTD:
            _get_zstd()
        elif codec not in CODEC_NAMES:
            return f"unknown compression codec {codec}"
    except UnsupportedCompressionError as exc:
        return str(exc)
    return None


def is_available(codec: int) -> bool:
    """Whether ``codec`` can be used in this process."""
    return unavailable_reason(codec) is None


def available_codecs() -> list[int]:
    return [codec for codec in CODEC_NAMES if is_available(codec)]


def compress(codec: int, data: Buffer, level: int | None = None) -> bytes:
    """Compress a records section with ``codec``.

    ``level`` is a Kafka ``compression.<codec>.level`` value (gzip -1 or 1-9, lz4 1-17,
    zstd -131072..22; snappy has none); None means the codec's default.
    """
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        compressor = zlib.compressobj(_GZIP_LEVEL if level is None else level, zlib.DEFLATED, 31)
        return compressor.compress(data) + compressor.flush()  # wbits 31: gzip container
    if codec == LZ4:
        # Java's KafkaLZ4BlockInputStream decodes each block on its own, so blocks must be
        # independent; it does not need a content checksum.
        return _lz4frame.compress(
            data,
            compression_level=_lz4_level(level),
            block_size=_lz4frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
        )
    if codec == SNAPPY:
        return _xerial_compress(_get_snappy(), bytes(data))
    if codec == ZSTD:
        return _get_zstd().ZstdCompressor(level=_ZSTD_LEVEL if level is None else level).compress(bytes(data))
    raise UnsupportedCompressionError(f"unknown compression codec {codec}")


def decompress(codec: int, data: Buffer, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """Decompress a records section; CorruptRecordError if it is malformed or exceeds ``max_size``."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return _gzip_decompress(data, max_size)
    if codec == LZ4:
        return _lz4_decompress(data, max_size)
    if codec == SNAPPY:
        return _snappy_decompress(_get_snappy(), bytes(data), max_size)
    if codec == ZSTD:
        return _zstd_decompress(_get_zstd(), data, max_size)
    raise UnsupportedCompressionError(f"unknown compression codec {codec}")


def _too_big(max_size: int) -> CorruptRecordError:
    return CorruptRecordError(f"decompressed records exceed {max_size} bytes")


def _gzip_decompress(data: Buffer, max_size: int) -> bytes:
    out = bytearray()
    remaining = bytes(data)
    # Java's GZIPInputStream reads concatenated members; so do we.
    while remaining:
        decompressor = zlib.decompressobj(31)
        try:
            out += decompressor.decompress(remaining, max_size + 1 - len(out))
        except zlib.error as exc:
            raise CorruptRecordError(f"bad gzip data: {exc}") from None
        if len(out) > max_size:
            raise _too_big(max_size)
        if not decompressor.eof:
            if decompressor.unconsumed_tail:
                raise _too_big(max_size)
            raise CorruptRecordError("gzip data truncated")
        remaining = decompressor.unused_data
    return bytes(out)


def _lz4_decompress(data: Buffer, max_size: int) -> bytes:
    decompressor = _lz4frame.LZ4FrameDecompressor()
    try:
        out = decompressor.decompress(data, max_length=max_size + 1)
    except (RuntimeError, ValueError, OverflowError) as exc:
        raise CorruptRecordError(f"bad lz4 data: {exc}") from None
    if len(out) > max_size:
        raise _too_big(max_size)
    if not decompressor.eof:
        raise CorruptRecordError("lz4 frame truncated")
    return out


def _xerial_compress(snappy: _Snappy, data: bytes) -> bytes:
    parts = [_XERIAL_HEADER.pack(XERIAL_MAGIC, _XERIAL_VERSION, _XERIAL_VERSION)]
    for start in range(0, len(data), _XERIAL_BLOCK_SIZE):
        block = snappy.compress_raw(data[start : start + _XERIAL_BLOCK_SIZE])
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _raw_snappy_length(block: bytes) -> int:
    """Uncompressed length from a raw snappy block's varint preamble."""
    try:
        return decode_unsigned_varint(block, 0, 5)[0]
    except VarintError as exc:
        raise CorruptRecordError(f"bad snappy block: {exc}") from None


def _snappy_block(snappy: _Snappy, block: bytes, budget: int, max_size: int) -> bytes:
    # Check the declared size before inflating, so the cap holds without trusting the codec.
    if _raw_snappy_length(block) > budget:
        raise _too_big(max_size)
    try:
        return snappy.decompress_raw(block)
    except Exception as exc:  # each snappy binding raises its own error type
        raise CorruptRecordError(f"bad snappy data: {exc}") from None


def _snappy_decompress(snappy: _Snappy, data: bytes, max_size: int) -> bytes:
    """Accept both xerial framing (Java producer) and a raw snappy block (librdkafka)."""
    if not data.startswith(XERIAL_MAGIC):
        return _snappy_block(snappy, data, max_size, max_size)
    if len(data) < _XERIAL_HEADER.size:
        raise CorruptRecordError("xerial snappy header truncated")
    out = bytearray()
    pos = _XERIAL_HEADER.size
    while pos < len(data):
        if len(data) - pos < 4:
            raise CorruptRecordError("xerial snappy chunk length truncated")
        (length,) = _INT32.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > len(data):
            raise CorruptRecordError(f"xerial snappy chunk of {length} bytes overruns the data")
        out += _snappy_block(snappy, data[pos : pos + length], max_size - len(out), max_size)
        pos += length
    return bytes(out)


def _zstd_decompress(zstd: ModuleType, data: Buffer, max_size: int) -> bytes:
    try:
        reader = zstd.ZstdDecompressor().stream_reader(bytes(data), read_across_frames=True)
        out = bytearray()
        while len(out) <= max_size:
            chunk = reader.read(max_size + 1 - len(out))
            if not chunk:
                break
            out += chunk
    except zstd.ZstdError as exc:
        raise CorruptRecordError(f"bad zstd data: {exc}") from None
    if len(out) > max_size:
        raise _too_big(max_size)
    return bytes(out)
