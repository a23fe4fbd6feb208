"""The active controller's periodic work: leadership watch, broker fencing, leader rebalance."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from metadata.controller.brokers import fence_expired_brokers
from metadata.election import preferred_leader_changes

if TYPE_CHECKING:
    from broker.controller.service import QuorumController

logger = logging.getLogger(__name__)


async def run_background_tasks(controller: "QuorumController", *,
                               task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
                               ) -> None:
    """Run every periodic task of `controller` until cancelled."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch_leadership, controller)
        nursery.start_soon(fence_loop, controller)
        if controller.settings.auto_leader_rebalance_enable:
            nursery.start_soon(rebalance_loop, controller)
        task_status.started()


async def watch_leadership(controller: "QuorumController") -> None:
    """Notice gaining or losing the active role promptly, even with no requests coming in."""
    while True:
        controller.check_leadership()
        await trio.sleep(controller.leadership_poll_interval_s)


async def fence_loop(controller: "QuorumController") -> None:
    """Fence brokers whose session expired (no heartbeat for broker.session.timeout.ms)."""
    settings = controller.settings
    while True:
        await trio.sleep(controller.fence_check_interval_s)
        if controller.is_active:
            fenced = await controller.write(
                "fencing expired brokers",
                lambda image, now_ms: fence_expired_brokers(image, controller.tracker, now_ms,
                                                            settings))
            if fenced:
                logger.info("committed %d record(s) fencing expired brokers", fenced)


async def rebalance_loop(controller: "QuorumController") -> None:
    """Elect preferred leaders every leader.imbalance.check.interval.seconds."""
    interval = controller.settings.leader_imbalance_check_interval_seconds
    while True:
        await trio.sleep(interval)
        if controller.is_active:
            moved = await controller.write(
                "preferred leader election", lambda image, now_ms: preferred_leader_changes(image))
            if moved:
                logger.info("moved %d partition leader(s) back to their preferred replica", moved)
