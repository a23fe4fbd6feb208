"""Free local ports for clusters started by tests on a shared machine.

Ports come from the range in ``RAFTKA_TEST_PORT_RANGE`` (``LOW-HIGH``), by default one below
Linux's ephemeral range (so outgoing connections do not take them between the check and the
bind) that leaves out ports of services commonly found on a developer machine or CI host.
A block whose port another process holds is skipped; a port taken between the check and the
node's bind makes ``bootstrap_on_free_ports`` pick another block.
"""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from cluster.launcher.cluster import bootstrap_quorum
from cluster.launcher.layout import HOST, ClusterInfo, plan_cluster
from cluster.launcher.processes import LauncherError

PORT_RANGE_ENV = "RAFTKA_TEST_PORT_RANGE"
DEFAULT_PORT_RANGE = (20000, 29999)
# Well-known ports of services a test machine may run (Kafka, ZooKeeper, databases, web and
# proxy servers, container registries): never handed out even when free right now.
RESERVED_PORTS = frozenset({
    80, 443, 2181, 2375, 2376, 2379, 2380, 3000, 3306, 4369, 5000, 5432, 5601, 5672, 6379,
    6443, 8000, 8008, 8080, 8081, 8082, 8083, 8088, 8443, 8888, 9000, 9042, 9090, 9091,
    9092, 9093, 9094, 9200, 9300, 11211, 15672, 25565, 26257, 27017, 27018, 27019, 28015,
    28017, 29092, 29093, 29094,
})
PICK_ATTEMPTS = 500
BOOTSTRAP_ATTEMPTS = 10


def parse_port_range(text: str) -> tuple[int, int]:
    """``LOW-HIGH`` (inclusive) as a pair; ValueError naming the variable otherwise."""
    low_text, sep, high_text = text.strip().partition("-")
    try:
        low, high = int(low_text), int(high_text)
    except ValueError:
        low, high = 0, -1
    if not sep or not 1024 <= low <= high <= 65535:
        raise ValueError(f"{PORT_RANGE_ENV}={text!r}: expected LOW-HIGH with "
                         f"1024 <= LOW <= HIGH <= 65535")
    return low, high


def configured_port_range(environ: Mapping[str, str] | None = None) -> tuple[int, int]:
    """The range ``RAFTKA_TEST_PORT_RANGE`` names, else the default."""
    text = (os.environ if environ is None else environ).get(PORT_RANGE_ENV, "").strip()
    return parse_port_range(text) if text else DEFAULT_PORT_RANGE


def is_free(port: int) -> bool:
    """Whether a listener could bind ``port`` on the loopback address now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def cluster_ports(nodes: int, controllers: int, base_port: int,
                  overrides: Mapping[str, str] | None = None) -> list[int]:
    """Every port the launcher's layout gives a cluster started at ``base_port``."""
    plan = plan_cluster(Path("."), "", nodes, controllers, base_port, overrides)
    return [port for node in plan.nodes for port in node.ports().values()]


def _usable(ports: Iterable[int], low: int, high: int) -> bool:
    wanted = list(ports)
    return (all(low <= p <= high and p not in RESERVED_PORTS for p in wanted)
            and all(is_free(p) for p in wanted))


def pick_base_port(nodes: int = 3, controllers: int = 0,
                   overrides: Mapping[str, str] | None = None,
                   port_range: tuple[int, int] | None = None,
                   rng: random.Random | None = None) -> int:
    """A base port whose whole cluster layout lies in the range, avoids reserved ports and
    is free now. LauncherError when none is found."""
    low, _ = port_range or configured_port_range()
    offsets = [port - low for port in cluster_ports(nodes, controllers, low, overrides)]
    return pick_block(offsets, port_range, rng)


def pick_block(offsets: Sequence[int], port_range: tuple[int, int] | None = None,
               rng: random.Random | None = None) -> int:
    """A base port such that ``base + offset``, for every offset, lies in the range, is not
    reserved and is free now. LauncherError when none is found."""
    low, high = port_range or configured_port_range()
    span = max(offsets) + 1
    if high - low + 1 < span:
        raise LauncherError(f"port range {low}-{high} ({PORT_RANGE_ENV}) is narrower than "
                            f"the {span} ports this layout spans")
    choose = rng or random
    for _ in range(PICK_ATTEMPTS):
        base = choose.randint(low, high - span + 1)
        if _usable([base + offset for offset in offsets], low, high):
            return base
    raise LauncherError(f"no free block of ports in {low}-{high} ({PORT_RANGE_ENV}) after "
                        f"{PICK_ATTEMPTS} tries")


def free_ports(count: int, port_range: tuple[int, int] | None = None,
               rng: random.Random | None = None) -> list[int]:
    """``count`` distinct single ports from the range, each free now and not reserved."""
    low, high = port_range or configured_port_range()
    choose = rng or random
    ports: list[int] = []
    for _ in range(PICK_ATTEMPTS):
        if len(ports) == count:
            return ports
        port = choose.randint(low, high)
        if port not in ports and _usable([port], low, high):
            ports.append(port)
    if len(ports) == count:
        return ports
    raise LauncherError(f"fewer than {count} free ports in {low}-{high} ({PORT_RANGE_ENV})")


def is_port_conflict(error: LauncherError) -> bool:
    """Whether a launch failed because a port was taken (by the check or at the bind)."""
    return "already in use" in str(error).lower()


def bootstrap_on_free_ports(directory: Path, nodes: int = 3, controllers: int = 0,
                            overrides: Mapping[str, str] | None = None,
                            **kwargs: Any) -> ClusterInfo:
    """``bootstrap_quorum`` on a block of free ports from the configured range, picking
    again when a port is taken before a node binds it. The first attempt uses ``directory``;
    later ones use fresh subdirectories (a failed attempt may have formatted storage), so
    callers use the returned ``ClusterInfo.dir``. Other launch failures propagate."""
    last: LauncherError | None = None
    for attempt in range(BOOTSTRAP_ATTEMPTS):
        target = directory if attempt == 0 else directory / f"retry-{attempt}"
        base_port = pick_base_port(nodes, controllers, overrides)
        try:
            return bootstrap_quorum(target, nodes, controllers, base_port, overrides, **kwargs)
        except LauncherError as exc:
            if not is_port_conflict(exc):
                raise
            last = exc
    raise LauncherError(f"every one of {BOOTSTRAP_ATTEMPTS} port blocks was taken before "
                        f"its nodes could bind; last: {last}")
