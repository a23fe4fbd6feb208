"""Snapshot file format: what pysyncobj's full dump holds for us, as msgpack (never pickle).

Layout: MAGIC (8 bytes) | CRC-32 of the body (4 bytes, big-endian) | body, where the body is a
msgpack map: version, offset (last applied log index), epoch (its term), last_entry and
prev_entry (the two journal entries pysyncobj keeps as [command, index, term]), voters
(pysyncobj addresses), state (StateMachine.snapshot() bytes).
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import msgpack

from kraft.errors import SnapshotFormatError

MAGIC = b"RKSNAP\x00\x01"
FORMAT_VERSION = 1
_CRC = struct.Struct(">I")

JournalEntry = tuple[bytes, int, int]


@dataclass(frozen=True)
class Snapshot:
    """One decoded snapshot file."""

    offset: int
    epoch: int
    last_entry: JournalEntry
    prev_entry: JournalEntry
    voters: tuple[str, ...]
    state: bytes


def encode_snapshot(snapshot: Snapshot) -> bytes:
    """Serialize a snapshot to the file format."""
    body = msgpack.packb(
        {
            "version": FORMAT_VERSION,
            "offset": snapshot.offset,
            "epoch": snapshot.epoch,
            "last_entry": list(snapshot.last_entry),
            "prev_entry": list(snapshot.prev_entry),
            "voters": list(snapshot.voters),
            "state": snapshot.state,
        },
        use_bin_type=True,
    )
    return MAGIC + _CRC.pack(zlib.crc32(body)) + body


def decode_snapshot(data: bytes) -> Snapshot:
    """Parse the file format; raises SnapshotFormatError on any damage."""
    header = len(MAGIC) + _CRC.size
    if len(data) < header or data[: len(MAGIC)] != MAGIC:
        raise SnapshotFormatError("not a Raftka snapshot (bad magic)")
    (crc,) = _CRC.unpack_from(data, len(MAGIC))
    body = data[header:]
    if zlib.crc32(body) != crc:
        raise SnapshotFormatError("snapshot checksum mismatch")
    try:
        fields = msgpack.unpackb(body, raw=False)
        if fields["version"] != FORMAT_VERSION:
            raise SnapshotFormatError(f"unsupported snapshot version {fields['version']}")
        return Snapshot(
            offset=int(fields["offset"]),
            epoch=int(fields["epoch"]),
            last_entry=_entry(fields["last_entry"]),
            prev_entry=_entry(fields["prev_entry"]),
            voters=tuple(str(v) for v in fields["voters"]),
            state=bytes(fields["state"]),
        )
    except (KeyError, TypeError, ValueError, msgpack.UnpackException) as exc:
        raise SnapshotFormatError(f"malformed snapshot: {exc}") from None


def _entry(value: object) -> JournalEntry:
    if not isinstance(value, list) or len(value) != 3 or not isinstance(value[0], bytes):
        raise SnapshotFormatError("malformed journal entry in snapshot")
    return (value[0], int(value[1]), int(value[2]))


def write_snapshot_file(path: Path, snapshot: Snapshot) -> None:
    """Write and fsync the file; the caller renames it into place."""
    with open(path, "wb") as f:
        f.write(encode_snapshot(snapshot))
        f.flush()
        os.fsync(f.fileno())


def read_snapshot_file(path: Path) -> Snapshot:
    """Read and verify a snapshot file."""
    return decode_snapshot(path.read_bytes())
