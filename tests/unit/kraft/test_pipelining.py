"""Under pipelined load followers never cut back entries they already have."""

from __future__ import annotations

import logging

import pytest
import trio

from tests.unit.kraft.support import wait_until


async def test_concurrent_appends_never_truncate_matching_entries(cluster_factory, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="pysyncobj")
    cluster = cluster_factory(3, fsync=False)
    cluster.start_all()
    leader = await cluster.leader()
    per_task, tasks = 40, 40

    async def appender(task: int) -> None:
        for i in range(per_task):
            await leader.append([b"%d-%d" % (task, i)])

    async with trio.open_nursery() as nursery:
        for task in range(tasks):
            nursery.start_soon(appender, task)
    expected = cluster.machines[leader.config.node_id].records()
    assert len(expected) == per_task * tasks
    await wait_until(lambda: all(m.records() == expected for m in cluster.machines.values()), 10,
                     "followers to apply everything")
    truncations = [r.getMessage() for r in caplog.records if "truncating" in r.getMessage()]
    assert truncations == []
