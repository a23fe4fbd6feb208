"""The periodic log jobs run on their configured periods."""

from __future__ import annotations

import trio

from clients.protocol import ApiKey
from tests.unit.dataplane.batches import batch, now_ms, only_partition, produce_body
from tests.unit.dataplane.harness import running_broker


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
