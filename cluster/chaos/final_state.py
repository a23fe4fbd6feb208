"""What a healed cluster holds at the end of a chaos run: each partition's final log as its
leader serves it, and each replica's bytes below the high watermark, read from its segment
files on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import trio

from clients.common.properties import load_properties
from cluster.launcher import ClusterInfo
from clients.consumer import Consumer
from clients.records.errors import CorruptRecordError
from clients.records.header import iter_batches

TopicPartition = tuple[str, int]


async def read_final_logs(bootstrap: str, partitions: Iterable[TopicPartition],
                          timeout_s: float = 120) -> tuple[dict[TopicPartition, list[tuple[int, bytes]]],
                                                           dict[TopicPartition, int]]:
    """Every record of `partitions` from the start to the high watermark, read_uncommitted
    (aborted records are in the log too), and the high watermarks."""
    wanted = list(partitions)
    logs: dict[TopicPartition, list[tuple[int, bytes]]] = {tp: [] for tp in wanted}
    config = {"bootstrap.servers": bootstrap, "isolation.level": "read_uncommitted",
              "enable.auto.commit": False, "client.id": "chaos-final-read"}
    with trio.fail_after(timeout_s):
        async with Consumer(config) as consumer:
            consumer.assign(wanted)
            consumer.seek_to_beginning(wanted)
            ends = await consumer.end_offsets(wanted)
            remaining = {tp for tp in wanted if ends[tp] > 0}
            while remaining:
                for r in await consumer.poll(500):
                    tp = (r.topic, r.partition)
                    logs[tp].append((r.offset, r.value or b""))
                for tp in list(remaining):
                    if await consumer.position(tp) >= ends[tp]:
                        remaining.discard(tp)
    return logs, ends


def replica_bytes(info: ClusterInfo, tp: TopicPartition, high_watermark: int
                  ) -> dict[int, bytes]:
    """Each node's whole batches of `tp` below `high_watermark`, from its segment files;
    nodes without the partition are left out."""
    found = {}
    for node in info.nodes:
        segments = _segments(Path(p) for p in _log_dirs(node.config_path))
        files = segments.get(tp)
        if files is None:
            continue
        kept = bytearray()
        for path in files:
            data = path.read_bytes()
            try:
                for pos, header in iter_batches(data, verify_crc=False):
                    if header.last_offset >= high_watermark:
                        break
                    kept += data[pos:pos + header.size]
            except CorruptRecordError:
                pass        # a torn tail past the last whole batch: not below the HW
        found[node.node_id] = bytes(kept)
    return found


def _log_dirs(config_path: Path) -> list[str]:
    props = load_properties(config_path)
    return [d for d in props.get("log.dirs", "").split(",") if d]


def _segments(dirs: Iterable[Path]) -> dict[TopicPartition, list[Path]]:
    out: dict[TopicPartition, list[Path]] = {}
    for directory in dirs:
        if not directory.is_dir():
            continue
        for child in directory.iterdir():
            topic, _, number = child.name.rpartition("-")
            if child.is_dir() and topic and number.isdigit():
                out[(topic, int(number))] = sorted(child.glob("*.log"))
    return out
