"""Opening a partition directory: finish interrupted swaps, load and recover segments.

Kafka's rules: leftover ``.cleaned``, ``.deleted`` and temp files are removed; a ``.log.swap``
is a finished compaction whose rename did not happen, so it replaces the segment of the same
base offset. Segments after the recovery point are rescanned after an unclean shutdown; a
segment with a torn or corrupt tail is truncated there and every later segment is deleted.
Index files are never trusted when missing or inconsistent: they are rebuilt from the log,
also when an entry turns out not to match the log after loading.
"""

from __future__ import annotations

import logging
from pathlib import Path

from broker.log.index import CorruptIndexError
from broker.log.txn_index import TXN_INDEX_SUFFIX
from broker.log.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    SegmentSettings,
    file_name,
)

logger = logging.getLogger(__name__)


def _base_offset_of(path: Path, suffix: str) -> int | None:
    stem = path.name[: -len(suffix)]
    if len(stem) != 20 or not stem.isdigit():
        return None
    return int(stem)


def clean_partition_dir(directory: Path) -> set[int]:
    """Remove leftovers of interrupted operations and complete pending swaps; returns the
    base offsets of segments whose aborted-transaction index must be rebuilt."""
    swapped: set[int] = set()
    for path in list(directory.iterdir()):
        name = path.name
        if name.endswith((".tmp", CLEANED_SUFFIX, DELETED_SUFFIX)):
            path.unlink(missing_ok=True)
        elif name.endswith((INDEX_SUFFIX + SWAP_SUFFIX, TIME_INDEX_SUFFIX + SWAP_SUFFIX)):
            path.unlink(missing_ok=True)  # indexes of a swapped segment are rebuilt
    for path in sorted(directory.glob("*" + LOG_SUFFIX + SWAP_SUFFIX)):
        base = _base_offset_of(path, LOG_SUFFIX + SWAP_SUFFIX)
        if base is None:
            continue
        logger.info("completing interrupted compaction swap of %s", path)
        swapped.add(base)
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            (directory / file_name(base, suffix)).unlink(missing_ok=True)
        path.replace(directory / file_name(base, LOG_SUFFIX))
    # Which aborted-transaction index belongs to an interrupted swap's segment depends on
    # where the renames stopped: both are dropped and rebuilt from the segment's markers.
    for path in directory.glob("*" + TXN_INDEX_SUFFIX + "*"):
        base = _base_offset_of(path, path.name[20:])
        if base in swapped or path.name.endswith(SWAP_SUFFIX):
            path.unlink(missing_ok=True)
            if base is not None:
                swapped.add(base)
    return swapped


def segment_base_offsets(directory: Path) -> list[int]:
    bases = []
    for path in directory.glob("*" + LOG_SUFFIX):
        base = _base_offset_of(path, LOG_SUFFIX)
        if base is not None:
            bases.append(base)
    return sorted(bases)


def _indexes_sane(segment: LogSegment) -> bool:
    """Whether a segment's index files can be used as they are.

    Beyond the ordering checks, the first and last offset index entries are checked against
    the batches they point at: the marks are derived from the last one. Every other entry is
    checked each time a lookup uses it (`LogSegment.headers_from`).
    """
    try:
        index = segment.offset_index
        index.sanity_check(segment.size)
        for offset, position in {next(iter(index), (segment.base_offset, 0)), index.last_entry()}:
            if position and not segment.batch_ends_at(position, offset):
                raise CorruptIndexError(f"entry ({offset}, {position}) of {index.path} does not match the log")
        segment.load_marks()
        segment.time_index.sanity_check(segment.next_offset)
    except (CorruptIndexError, Exception) as exc:  # noqa: BLE001 - any failure means rebuild
        logger.warning("rebuilding indexes of %s: %s", segment.log_path, exc)
        return False
    return True


def load_segments(
    directory: Path,
    settings: SegmentSettings,
    *,
    recovery_point: int,
    clean_shutdown: bool,
    now_ms: int,
) -> list[LogSegment]:
    """Open every segment; recover those after the recovery point if the stop was unclean."""
    txn_rebuilds = clean_partition_dir(directory)
    bases = segment_base_offsets(directory)
    segments: list[LogSegment] = []
    for n, base in enumerate(bases):
        active = n == len(bases) - 1
        segment = LogSegment(directory, base, settings, active=active, created_ms=now_ms)
        segment.txn_index_rebuild_needed = base in txn_rebuilds
        segments.append(segment)
    # The segment holding the recovery point and all later ones were possibly not flushed.
    first_unflushed = len(segments)
    if not clean_shutdown:
        first_unflushed = 0
        for n, segment in enumerate(segments):
            if segment.base_offset <= recovery_point:
                first_unflushed = n
    for n, segment in enumerate(segments):
        must_recover = n >= first_unflushed or segment.index_rebuild_needed
        if not must_recover and not _indexes_sane(segment):
            must_recover = True
        if must_recover:
            truncated = segment.recover()
            if truncated and n < len(segments) - 1:
                for later in segments[n + 1 :]:
                    logger.warning("deleting %s after a corrupt segment", later.log_path)
                    later.close_and_delete()
                del segments[n + 1 :]
                break
    for segment in segments[:-1]:
        segment.become_inactive()
    if segments:
        segments[-1].offset_index.make_writable()
        segments[-1].time_index.make_writable()
    return segments
