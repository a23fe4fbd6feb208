"""A chaos run from start to verdict: start a cluster with each node on its own address,
run the workload while the nemesis injects and heals faults, heal, wait for the replicas to
catch up, read what the cluster holds, check it, and write the report and the timeline."""

from __future__ import annotations

import json
import logging
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from cluster.chaos.checker import History, check
from cluster.chaos.final_state import read_final_logs, replica_bytes
from cluster.chaos.nemesis import Fault, Nemesis, resolve, schedule
from cluster.chaos.report import (
    FaultWindow,
    ack_times,
    fault_figures,
    report_lines,
    summary,
    write_timeline,
)
from cluster.chaos.workload import GROUP, Workload, WorkloadSettings
from cluster.testing.cluster import RaftkaCluster, start_cluster
from cluster.testing.disks import Tmpfs, move_log_dirs
from cluster.testing.network_partition import (NetworkPartitioner, ensure_iptables,
    remove_stale_rules)
from clients.admin import Admin

logger = logging.getLogger(__name__)

TOPIC = "chaos"
DISK_SIZE = 256 << 20
CATCH_UP_S = 120
MIN_CALM_S = 4.0
IN_SYNC_S = 30.0             # longest wait for a full ISR before the next fault


@dataclass(frozen=True)
class ChaosSettings:
    directory: Path
    nodes: int
    duration_s: float
    kinds: list[str]
    seed: int
    hosts: list[str]
    partitions: int = 3
    session_timeout_ms: int = 3000
    producers: int = 2
    rate_per_producer: float = 400.0


@dataclass(frozen=True)
class ChaosResult:
    report: dict[str, Any]
    lines: list[str]
    timeline: Path
    report_path: Path

    @property
    def ok(self) -> bool:
        return not self.report["violations"]


def run_chaos(settings: ChaosSettings) -> ChaosResult:
    """Run it; raises on set-up failures (a missing tool, a cluster that cannot start)."""
    settings.directory.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        partitioner = None
        if "partition" in settings.kinds:
            iptables = ensure_iptables()
            remove_stale_rules(iptables)
            partitioner = stack.enter_context(NetworkPartitioner(iptables))
        cluster = stack.enter_context(start_cluster(
            settings.directory / "cluster", settings.nodes, hosts=settings.hosts,
            broker_session_timeout_ms=settings.session_timeout_ms,
            broker_heartbeat_interval_ms=min(500, settings.session_timeout_ms // 4)))
        disks = {}
        if "disk" in settings.kinds:
            for node in cluster.node_ids:
                disk = Tmpfs(settings.directory / "disks" / f"node-{node}", DISK_SIZE)
                stack.callback(disk.unmount)
                move_log_dirs(cluster, node, [disk.path])
                disks[node] = disk
        cluster.create_topic(TOPIC, settings.partitions, 3, {"min.insync.replicas": "2"})
        faults = schedule(settings.kinds, cluster.node_ids, settings.duration_s,
                          settings.seed, settings.session_timeout_ms / 1000)
        nemesis = Nemesis(cluster, partitioner, disks)
        clock = RunClock()
        controllers = tuple(f"{cluster.host(n)}:{cluster.info.node(n).controller_port}"
                            for n in cluster.node_ids
                            if cluster.info.node(n).controller_port is not None)
        workload = Workload(WorkloadSettings(cluster.bootstrap_servers, TOPIC,
                                             settings.partitions, settings.producers,
                                             settings.rate_per_producer,
                                             controllers=controllers), clock)
        windows = trio.run(_drive, cluster, nemesis, faults, workload, settings, clock)
        return _verdict(settings, cluster, workload, windows)


class RunClock:
    """Seconds since the run started (on trio's clock, so only inside the run)."""

    def __init__(self) -> None:
        self.start = 0.0

    def begin(self) -> None:
        self.start = trio.current_time()

    def at(self, seconds: float) -> float:
        return self.start + seconds

    def __call__(self) -> float:
        return trio.current_time() - self.start


async def _drive(cluster: RaftkaCluster, nemesis: Nemesis, faults: list[Fault],
                 workload: Workload, settings: ChaosSettings, clock: RunClock
                 ) -> list[FaultWindow]:
    clock.begin()
    windows: list[FaultWindow] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(workload.run)
        calm_until = 0.0
        for fault in faults:
            # The schedule's start, but never before a calm spell after the last heal (a
            # restart can take longer than the schedule allowed).
            await trio.sleep_until(max(clock.at(fault.start_s), calm_until))
            await _wait_in_sync(cluster)
            if clock() >= settings.duration_s:
                break
            seen = workload.log.controller_seen
            controller = seen[-1][1] if seen else None
            node = resolve(fault, controller, await _leaders(cluster.bootstrap_servers))
            logger.info("injecting %s on node %d (%s)", fault.kind, node, fault.target)
            try:
                await trio.to_thread.run_sync(nemesis.inject, fault, node)
                # The fault begins once it is in place (iptables may wait for its lock).
                started = clock()
                await trio.sleep(fault.duration_s)
            finally:
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(nemesis.heal, fault, node)
            windows.append(FaultWindow(fault.kind, node, started, clock(), controller))
            calm_until = trio.current_time() + MIN_CALM_S
        await trio.sleep_until(clock.at(settings.duration_s))
        workload.stop_writing.set()
        await trio.to_thread.run_sync(
            lambda: cluster.wait_for_isr(TOPIC, 3, timeout=CATCH_UP_S))
        await _wait_for_readers(cluster.bootstrap_servers, settings.partitions)
        workload.stop_reading.set()
    return windows


async def _wait_in_sync(cluster: RaftkaCluster) -> None:
    """Wait (a while) until every replica of the topic is in sync again. A fault on a
    cluster still short of the last one's replica measures that replica's return rather
    than the fault: with min.insync.replicas=2, an ISR of one refuses acks=all writes."""
    try:
        await trio.to_thread.run_sync(
            lambda: cluster.wait_for_isr(TOPIC, 3, timeout=IN_SYNC_S))
    except TimeoutError as exc:         # still short: the run goes on regardless
        logger.warning("injecting the next fault with replicas out of sync: %s", exc)


async def _leaders(bootstrap: str) -> list[int]:
    """The leader of each partition of the topic, in partition order ([] if unknown)."""
    with trio.move_on_after(5):
        try:
            async with Admin({"bootstrap.servers": bootstrap}) as admin:
                [topic] = await admin.describe_topics([TOPIC])
                return [p.leader for p in sorted(topic.partitions, key=lambda p: p.partition)]
        except Exception as exc:
            logger.debug("leaders: %s", exc)
    return []


async def _wait_for_readers(bootstrap: str, partitions: int) -> None:
    """Until the group has committed up to the end of every partition (bounded: a reader
    that cannot catch up is no violation in itself; what it read is still checked)."""
    tps = [(TOPIC, p) for p in range(partitions)]
    with trio.move_on_after(CATCH_UP_S):
        async with Admin({"bootstrap.servers": bootstrap}) as admin:
            while True:
                try:
                    ends = await admin.list_offsets({tp: -1 for tp in tps}, isolation_level=1)
                    committed = await admin.list_group_offsets(GROUP)
                    if all(committed.get(tp, -1) >= _offset(ends[tp]) for tp in tps):
                        return
                except Exception as exc:
                    logger.debug("waiting for readers: %s", exc)
                await trio.sleep(0.5)


def _offset(answer: Any) -> int:
    return int(getattr(answer, "offset", answer))


def _verdict(settings: ChaosSettings, cluster: RaftkaCluster, workload: Workload,
             windows: list[FaultWindow]) -> ChaosResult:
    tps = [(TOPIC, p) for p in range(settings.partitions)]
    logs, ends = trio.run(read_final_logs, cluster.bootstrap_servers, tps)
    log = workload.log
    history = History(acknowledged=log.acknowledged, reads=log.reads, final_logs=logs,
                      replica_bytes={tp: replica_bytes(cluster.info, tp, ends[tp])
                                     for tp in tps},
                      committed_offsets=log.committed_offsets, controllers=log.controllers,
                      aborted=log.aborted)
    checked = check(history)
    times = ack_times(log.acknowledged, [(d.sent_s, d.acked_s) for d in log.deliveries])
    figures = fault_figures(windows, times, log.controller_views)
    report = summary(checked, figures, times, {
        "nodes": settings.nodes, "duration_s": settings.duration_s,
        "nemesis": settings.kinds, "seed": settings.seed,
        "session_timeout_ms": settings.session_timeout_ms,
        "reads": len(log.reads), "aborted": len(log.aborted),
        "failed_sends": log.failed_sends})
    report_path = settings.directory / "report.json"
    report_path.write_text(json.dumps(report, indent=1))
    timeline = settings.directory / "timeline.png"
    write_timeline(timeline, [(d.sent_s, d.acked_s) for d in log.deliveries], windows,
                   settings.duration_s)
    return ChaosResult(report, report_lines(report), timeline, report_path)
