"""Kafka's small text files in log and partition directories.

All writes go to ``<name>.tmp``, are fsynced and then renamed over the target, as Kafka does,
so a crash leaves either the old or the new content.
"""

from __future__ import annotations

import base64
import os
import time
import uuid
from pathlib import Path
from typing import Iterable, Mapping

from broker.log.errors import KafkaStorageError

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"


def write_atomically(path: Path, text: str, *, durable: bool = True) -> None:
    """Replace ``path`` with ``text``: readers see the old file or the new one, never part
    of one. ``durable`` also fsyncs the file before the rename and the dir after it."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(text)
        if durable:
            out.flush()
            os.fsync(out.fileno())
    os.replace(tmp, path)
    if durable:
        fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Make a rename or create in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_versioned_lines(path: Path) -> list[str] | None:
    """The entry lines of a "version / count / entries" file, None if it does not exist."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return None
    try:
        if int(lines[0]) != 0:
            raise ValueError(f"unsupported version {lines[0]}")
        count = int(lines[1])
        entries = lines[2 : 2 + count]
        if len(entries) != count:
            raise ValueError(f"expected {count} entries, found {len(entries)}")
    except (IndexError, ValueError) as exc:
        raise KafkaStorageError(f"malformed checkpoint file {path}: {exc}") from None
    return entries


def read_offset_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """Read a "topic partition offset" checkpoint; a missing file is empty."""
    entries = _read_versioned_lines(path)
    result: dict[tuple[str, int], int] = {}
    for line in entries or []:
        try:
            topic, partition, offset = line.split(" ")
            result[(topic, int(partition))] = int(offset)
        except ValueError:
            raise KafkaStorageError(f"malformed line {line!r} in {path}") from None
    return result


def write_offset_checkpoint(path: Path, offsets: Mapping[tuple[str, int], int]) -> None:
    lines = [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())]
    write_atomically(path, "\n".join(["0", str(len(lines)), *lines]) + "\n")


def read_epoch_checkpoint(path: Path) -> list[tuple[int, int]]:
    """Read ``leader-epoch-checkpoint``: (epoch, start offset) lines; missing is empty."""
    entries = _read_versioned_lines(path)
    result: list[tuple[int, int]] = []
    for line in entries or []:
        try:
            epoch, offset = line.split(" ")
            result.append((int(epoch), int(offset)))
        except ValueError:
            raise KafkaStorageError(f"malformed line {line!r} in {path}") from None
    return result


def write_epoch_checkpoint(path: Path, entries: Iterable[tuple[int, int]]) -> None:
    lines = [f"{epoch} {offset}" for epoch, offset in entries]
    write_atomically(path, "\n".join(["0", str(len(lines)), *lines]) + "\n")


def topic_id_to_string(topic_id: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")


def topic_id_from_string(text: str) -> uuid.UUID:
    padded = text + "=" * (-len(text) % 4)
    raw = base64.urlsafe_b64decode(padded)
    if len(raw) != 16:
        raise ValueError(f"topic id {text!r} is not 16 bytes")
    return uuid.UUID(bytes=raw)


def read_partition_metadata(directory: Path) -> uuid.UUID | None:
    """The topic id in ``partition.metadata``, None if the file does not exist."""
    try:
        text = (directory / PARTITION_METADATA).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    fields = _parse_properties(text, separator=":")
    if fields.get("version") != "0" or "topic_id" not in fields:
        raise KafkaStorageError(f"malformed {directory / PARTITION_METADATA}")
    return topic_id_from_string(fields["topic_id"])


def write_partition_metadata(directory: Path, topic_id: uuid.UUID) -> None:
    write_atomically(
        directory / PARTITION_METADATA, f"version: 0\ntopic_id: {topic_id_to_string(topic_id)}"
    )


def _parse_properties(text: str, separator: str = "=") -> dict[str, str]:
    result: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, _, value = line.partition(separator)
        result[key.strip()] = value.strip()
    return result


def read_meta_properties(directory: str | os.PathLike[str]) -> dict[str, str] | None:
    """The key/values of ``<dir>/meta.properties``, None if the file does not exist."""
    try:
        text = (Path(directory) / META_PROPERTIES).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return _parse_properties(text)


def write_meta_properties(directory: str | os.PathLike[str], props: Mapping[str, object]) -> None:
    """Write ``meta.properties`` (Kafka's layout; ``version`` defaults to 1)."""
    values = {"version": "1", **{k: str(v) for k, v in props.items()}}
    stamp = time.strftime("%a %b %d %H:%M:%S %Z %Y")
    lines = ["#", f"#{stamp}", *(f"{k}={v}" for k, v in sorted(values.items()))]
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    write_atomically(path / META_PROPERTIES, "\n".join(lines) + "\n")
