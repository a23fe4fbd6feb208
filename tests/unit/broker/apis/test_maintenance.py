"""The periodic log jobs run on their configured periods (the cleaner as a trio task)."""

from __future__ import annotations

from pathlib import Path

import trio

from broker.log.maintenance import LogMaintenance
from broker.log import LogManager, offset_map
from clients.clock import wall_clock_ms
from clients.protocol import ApiKey
from tests.unit.broker.apis.batches import batch, now_ms, only_partition, produce_body
from tests.unit.broker.apis.harness import broker_config, running_broker
from tests.unit.broker.log.helpers import batch as log_batch, read_all


async def test_retention_job_deletes_old_segments(tmp_path):
    extra = {"log.retention.check.interval.ms": "50"}
    async with running_broker(tmp_path, extra=extra) as broker:
        broker.create_topic("t", configs={"retention.ms": "1000", "segment.bytes": "300"})
        conn = await broker.connect()
        old = now_ms() - 60_000
        for _ in range(4):
            response = await conn.request(ApiKey.PRODUCE, produce_body(
                "t", batch([b"x" * 150], timestamp=old), acks=1))
            assert only_partition(response)["error_code"] == 0
        log = broker.log("t")
        with trio.fail_after(5):
            while log.log_start_offset < 3:  # the job runs every 50 ms
                await trio.sleep(0.02)
        assert len(log.segments) == 1
        await conn.aclose()


COMPACT = {"cleanup.policy": "compact", "segment.bytes": "300"}


async def test_cleaner_job_compacts_a_compacted_log(tmp_path: Path) -> None:
    manager = LogManager([tmp_path / "data"])
    log = manager.get_or_create_log("compacted", 0, config=COMPACT)
    now = wall_clock_ms()
    for n in range(200):
        log.append_as_leader(log_batch([b"v" * 100], keys=[b"k%d" % (n % 3)]), 0, now)
    log.update_high_watermark(log.log_end_offset)
    before = len(read_all(log))
    maintenance = LogMaintenance(manager, broker_config(tmp_path / "data", {
        "log.cleaner.backoff.ms": "10", "log.retention.check.interval.ms": "10"}))
    maintenance.initial_delay_ms = 0
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(maintenance.run)
            while len(read_all(log)) >= before:
                await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    kept = read_all(log)
    # The latest value of each key survives; everything before it in cleaned segments goes.
    assert {key for _, key, _ in kept} == {b"k0", b"k1", b"k2"}
    assert kept[-1][0] == 199
    manager.close()


async def test_the_cleaner_job_maps_no_more_keys_than_its_buffer_holds(tmp_path: Path) -> None:
    manager = LogManager([tmp_path / "data"])
    log = manager.get_or_create_log("compacted", 0, config=COMPACT)
    now = wall_clock_ms()
    for n in range(40):
        log.append_as_leader(log_batch([b"v" * 100], keys=[b"k%d" % n]), 0, now)  # every key new
    log.update_high_watermark(log.log_end_offset)
    # Three entries' bytes, filled to the default load factor of 0.9: room for two keys.
    buffer = str(3 * offset_map.ENTRY_BYTES)
    # One pass at start-up, then a minute's pause: the test sees that first pass alone.
    maintenance = LogMaintenance(manager, broker_config(tmp_path / "data", {
        "log.cleaner.backoff.ms": "60000", "log.cleaner.dedupe.buffer.size": buffer}))
    assert maintenance.cleaner_map_capacity == 2
    maintenance.initial_delay_ms = 0
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(maintenance.run)
            while log.first_dirty_offset == 0:
                await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    # The first pass cleaned up to where two keys filled the map, not the whole dirty section.
    assert log.first_dirty_offset == 2
    manager.close()
