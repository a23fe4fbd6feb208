"""The nemesis of a chaos run: a seeded schedule of faults (pure), and the blocking
operations that inject and heal each one on a running cluster.

One fault at a time, each followed by its heal and a calm spell, so that with RF=3 and
min.insync.replicas=2 an in-sync replica always survives: the promise under test.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Protocol, Sequence

FAULT_KINDS = ("kill", "pause", "partition", "disk")


# Whom each kind may hit: a partition leader, the active controller, or any node (`node`).
TARGETS = {"kill": ("leader", "controller", "node"), "pause": ("leader", "node"),
           "partition": ("leader", "controller"), "disk": ("leader", "node")}


@dataclass(frozen=True)
class Fault:
    """`kind` from `start_s` (seconds into the run) for `duration_s`, on the `target` as it
    is when the fault starts; `node` when the target is `node` or cannot be found."""

    kind: str
    node: int
    start_s: float
    duration_s: float
    target: str = "node"


def resolve(fault: Fault, controller: int | None, leaders: Sequence[int]) -> int:
    """The node `fault` hits, given the active controller and the partitions' leaders
    (the first leader is taken, so the choice stays seeded)."""
    if fault.target == "controller" and controller is not None:
        return controller
    live = [leader for leader in leaders if leader >= 0]
    if fault.target == "leader" and live:
        return live[fault.node % len(live)]
    return fault.node


def parse_kinds(text: str) -> list[str]:
    """`kill,pause` -> ["kill", "pause"]; ValueError naming an unknown kind."""
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    if not kinds:
        raise ValueError("--nemesis: name at least one fault kind")
    for kind in kinds:
        if kind not in FAULT_KINDS:
            raise ValueError(f"--nemesis: unknown fault kind {kind!r} "
                             f"(known: {', '.join(FAULT_KINDS)})")
    return kinds


def schedule(kinds: Sequence[str], nodes: Sequence[int], duration_s: float, seed: int,
             session_timeout_s: float, first_s: float = 5.0,
             calm_s: tuple[float, float] = (4.0, 8.0)) -> list[Fault]:
    """Faults at random (from `seed`) over `duration_s`, one at a time. Each lasts 1.5 to 3
    session timeouts, so a paused or cut-off broker is fenced while away."""
    rng = random.Random(seed)
    shortest = 1.5 * session_timeout_s
    faults, t = [], first_s
    while t + shortest <= duration_s:
        length = min(rng.uniform(shortest, 3 * session_timeout_s), duration_s - t)
        kind = rng.choice(list(kinds))
        faults.append(Fault(kind, rng.choice(list(nodes)), t, length,
                            rng.choice(TARGETS[kind])))
        t += length + rng.uniform(*calm_s)
    return faults


class FaultTarget(Protocol):
    """What the nemesis needs of a cluster (cluster.testing.cluster.RaftkaCluster has it)."""

    node_ids: list[int]

    def host(self, node: int) -> str: ...
    def kill(self, node: int) -> None: ...
    def pause(self, node: int) -> None: ...
    def resume(self, node: int) -> None: ...
    def restart(self, node: int, timeout: float = ...) -> None: ...
    def pid(self, node: int) -> int | None: ...


class Partitioner(Protocol):
    def isolate(self, host: str, others: list[str]) -> None: ...
    def heal(self) -> None: ...


class Disk(Protocol):
    def fill(self, leave_free: int = 0) -> None: ...
    def free_space(self) -> None: ...


class Nemesis:
    """Injects and heals faults; blocking (a chaos run calls it from a worker thread)."""

    def __init__(self, cluster: FaultTarget, partitioner: Partitioner | None = None,
                 disks: dict[int, Disk] | None = None, restart_timeout_s: float = 90) -> None:
        self.cluster = cluster
        self.partitioner = partitioner
        self.disks = disks or {}
        self.restart_timeout_s = restart_timeout_s

    def inject(self, fault: Fault, node: int) -> None:
        if fault.kind == "kill":
            self.cluster.kill(node)
        elif fault.kind == "pause":
            self.cluster.pause(node)
        elif fault.kind == "partition":
            self._partitioner().isolate(self.cluster.host(node), [
                self.cluster.host(n) for n in self.cluster.node_ids if n != node])
        elif fault.kind == "disk":
            self._disk(node).fill()
        else:
            raise ValueError(f"unknown fault kind {fault.kind!r}")

    def heal(self, fault: Fault, node: int) -> None:
        if fault.kind == "pause":
            self.cluster.resume(node)
        elif fault.kind == "partition":
            self._partitioner().heal()
        elif fault.kind == "disk":
            self._disk(node).free_space()
            # A broker whose only log dir failed shuts itself down; one that did not write
            # while full still has an offline dir until it restarts.
            self.cluster.restart(node, timeout=self.restart_timeout_s)
        if fault.kind == "kill" or self.cluster.pid(node) is None:
            self.cluster.restart(node, timeout=self.restart_timeout_s)

    def _partitioner(self) -> Partitioner:
        if self.partitioner is None:
            raise ValueError("partition faults need iptables")
        return self.partitioner

    def _disk(self, node: int) -> Disk:
        if node not in self.disks:
            raise ValueError(f"disk faults need node {node}'s log dir on a tmpfs")
        return self.disks[node]
