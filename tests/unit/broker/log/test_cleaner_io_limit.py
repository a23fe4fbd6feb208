"""log.cleaner.io.max.bytes.per.second paces a cleaner pass (on trio's mock clock)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from broker.log import LogManager, cleaner
from tests.unit.broker.log.helpers import NOW, batch

COMPACT = {"cleanup.policy": "compact", "segment.bytes": "300"}
STEP = 200


def _dirty_log(manager: LogManager) -> int:
    """A compacted log due for cleaning; the bytes a pass reads."""
    log = manager.get_or_create_log("c", 0, config=COMPACT, now_ms=NOW)
    for n in range(30):
        log.append_as_leader(batch([b"v%d" % n + b"x" * 40], keys=[b"k%d" % (n % 4)]), 0, NOW)
    log.update_high_watermark(log.log_end_offset)
    return sum(segment.size for segment in log.inactive_segments)


@pytest.mark.parametrize("limit", [1000.0, float("inf")])
async def test_a_pass_reads_no_faster_than_the_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        autojump_clock: trio.testing.MockClock, limit: float) -> None:
    monkeypatch.setattr(cleaner, "STEP_BYTES", STEP)
    manager = LogManager([tmp_path], now_ms=NOW)
    size = _dirty_log(manager)
    started = trio.current_time()
    assert await manager.run_cleaner(NOW, io_max_bytes_per_second=limit) == 1
    elapsed = trio.current_time() - started
    if limit == float("inf"):
        assert elapsed == 0
    else:
        # Paced per step: everything but the last step's bytes at the limit, at least.
        assert elapsed >= (size - STEP) / limit
    manager.close()
