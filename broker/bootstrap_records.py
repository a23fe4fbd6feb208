"""Metadata records `raftka storage format` leaves for the first active controller (Kafka's
bootstrap checkpoint): written into the metadata log directory, committed with the first
decision when the metadata log is still empty, and ignored ever after."""

from __future__ import annotations

import os
from pathlib import Path

import msgpack

from metadata.record_codec import decode_record, encode_record
from metadata.records import MetadataRecord

BOOTSTRAP_FILE = "bootstrap.records"
_FORMAT_VERSION = 1


class BootstrapRecordsError(Exception):
    """The bootstrap file cannot be read."""


def write_bootstrap_records(directory: str | Path, records: list[MetadataRecord]) -> Path:
    """Write `records` (replacing any earlier file), readable by the owner only: SCRAM
    credentials are not passwords, but they are still secrets."""
    path = Path(directory) / BOOTSTRAP_FILE
    payload = msgpack.packb([_FORMAT_VERSION, [encode_record(r) for r in records]],
                            use_bin_type=True)
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(payload)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    return path


def read_bootstrap_records(directory: str | Path) -> list[MetadataRecord]:
    """The records in `directory`'s bootstrap file; [] when there is none."""
    path = Path(directory) / BOOTSTRAP_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise BootstrapRecordsError(f"cannot read {path}: {exc.strerror}") from None
    try:
        version, encoded = msgpack.unpackb(data, raw=False)
        if version != _FORMAT_VERSION:
            raise ValueError(f"unknown format version {version}")
        return [decode_record(raw) for raw in encoded]
    except Exception as exc:
        raise BootstrapRecordsError(f"{path} is not a bootstrap records file: {exc}") from None
