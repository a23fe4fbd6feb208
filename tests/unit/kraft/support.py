"""Helpers for the quorum tests: a list state machine, free loopback ports (from the test
port range), quorum builders."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable, Iterator

import msgpack
import trio

from cluster.launcher.ports import free_ports  # noqa: F401  (the quorum tests import it here)
from kraft import QuorumConfig, RaftQuorum

# Fast timings keep elections (and so the tests) short; the ratios match the defaults.
FAST = dict(election_timeout_ms=500, election_backoff_max_ms=500, heartbeat_interval_ms=50,
            fetch_timeout_ms=1000, reconnect_backoff_ms=200, request_timeout_ms=5000)


class ListStateMachine:
    """Keeps every applied (offset, epoch, records); snapshots as msgpack."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.entries: list[tuple[int, int, list[bytes]]] = []
        self.base_offset = 0
        self._applied = 0
        self.restores: list[int] = []
        # Contract breaches seen (the quorum swallows apply errors, so tests check this list).
        self.violations: list[str] = []

    def apply_batch(self, records: list[bytes], offset: int, epoch: int) -> None:
        with self._lock:
            if offset <= self._applied:
                self.violations.append(f"offset {offset} applied after {self._applied}")
            self.entries.append((offset, epoch, list(records)))
            self._applied = offset

    def snapshot(self) -> bytes:
        with self._lock:
            return msgpack.packb([[o, e, r] for o, e, r in self.entries], use_bin_type=True)

    def restore(self, data: bytes, offset: int) -> None:
        with self._lock:
            self.entries = [(o, e, list(r)) for o, e, r in msgpack.unpackb(data, raw=False)]
            self._applied = offset
            self.restores.append(offset)

    @property
    def applied_offset(self) -> int:
        return self._applied

    def records(self) -> list[bytes]:
        """All applied records in order."""
        with self._lock:
            return [record for _, _, records in self.entries for record in records]


def voter_map(ports: list[int], first_id: int = 1) -> dict[int, tuple[str, int]]:
    return {first_id + i: ("127.0.0.1", port) for i, port in enumerate(ports)}


def make_config(node_id: int, voters: dict[int, tuple[str, int]], root: Path, **overrides: object) -> QuorumConfig:
    settings: dict[object, object] = {**FAST, **overrides}
    return QuorumConfig(node_id=node_id, voters=voters, log_dir=root / f"node-{node_id}",
                        is_voter=node_id in voters, **settings)  # type: ignore[arg-type]


class Cluster:
    """Quorum members in this process, each with its own ListStateMachine."""

    def __init__(self, root: Path, size: int, **overrides: object) -> None:
        self.root = root
        self.voters = voter_map(free_ports(size))
        self.overrides = overrides
        self.nodes: dict[int, RaftQuorum] = {}
        self.machines: dict[int, ListStateMachine] = {}
        self.all_machines: list[ListStateMachine] = []

    def start(self, node_id: int, machine: ListStateMachine | None = None, **overrides: object) -> RaftQuorum:
        machine = machine or ListStateMachine()
        self.all_machines.append(machine)
        quorum = RaftQuorum(make_config(node_id, self.voters, self.root, **{**self.overrides, **overrides}), machine)
        quorum.start()
        self.nodes[node_id] = quorum
        self.machines[node_id] = machine
        return quorum

    def start_all(self) -> None:
        for node_id in self.voters:
            self.start(node_id)

    def stop(self, node_id: int) -> None:
        self.nodes.pop(node_id).close()

    def close(self) -> None:
        for node_id in list(self.nodes):
            self.stop(node_id)

    def violations(self) -> list[str]:
        return [v for machine in self.all_machines for v in machine.violations]

    async def leader(self, timeout: float = 10.0) -> RaftQuorum:
        """The ready leader among the running voters."""
        def ready_leader() -> RaftQuorum | None:
            return next((q for q in self.nodes.values() if q.status().is_ready), None)
        return await wait_until(ready_leader, timeout, "a ready leader")


async def wait_until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll `check` until it returns something truthy; fail after `timeout` seconds."""
    with trio.move_on_after(timeout):
        while True:
            result = check()
            if result:
                return result
            await trio.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def iter_records(prefix: bytes, count: int) -> Iterator[bytes]:
    return (prefix + b"-%d" % i for i in range(count))
