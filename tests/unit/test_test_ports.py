"""Picking test ports: the range from RAFTKA_TEST_PORT_RANGE, reserved and taken ports
skipped, and a cluster bootstrapped on another block when its port is taken at the bind."""

from __future__ import annotations

import random
import socket
from pathlib import Path
from typing import Any, Iterator

import pytest

from cluster.launcher import ClusterInfo, LauncherError
from cluster.launcher import ports
from cluster.launcher.ports import (
    DEFAULT_PORT_RANGE,
    PORT_RANGE_ENV,
    RESERVED_PORTS,
    cluster_ports,
    configured_port_range,
    free_ports,
    is_free,
    parse_port_range,
    pick_base_port,
)


@pytest.fixture
def listening() -> Iterator[socket.socket]:
    """A port another process could hold: bound and listening on the loopback address.

    It is taken from the test range, below the ephemeral ports, with the two-node cluster
    block above it free: the tests below need exactly the taken port to be in use, and an
    ephemeral port's neighbours come and go with other processes' connections."""
    for _ in range(50):
        base = pick_base_port(nodes=2)
        if not all(is_free(port) for port in cluster_ports(2, 0, base + 1)):
            continue
        with socket.socket() as taken:
            try:
                taken.bind(("127.0.0.1", base))
            except OSError:
                continue
            taken.listen()
            yield taken
            return
    pytest.fail("no free two-node block of ports in the test range")


def test_the_environment_variable_sets_the_range() -> None:
    assert configured_port_range({}) == DEFAULT_PORT_RANGE
    assert configured_port_range({PORT_RANGE_ENV: " 40000-41999 "}) == (40000, 41999)
    for bad in ("40000", "x-y", "41999-40000", "80-2000", "40000-70000"):
        with pytest.raises(ValueError, match=PORT_RANGE_ENV):
            parse_port_range(bad)


def test_the_default_range_avoids_common_service_ports_and_ephemeral_ports() -> None:
    low, high = DEFAULT_PORT_RANGE
    assert high < 32768  # Linux's ephemeral range starts there
    for port in (5432, 8080, 9092, 9093, 9094):
        assert port in RESERVED_PORTS and not low <= port <= high


def test_picked_cluster_lies_in_the_configured_range(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PORT_RANGE_ENV, "23000-24500")
    for _ in range(20):
        base = pick_base_port(nodes=3)
        assert all(23000 <= p <= 24500 for p in cluster_ports(3, 0, base))
    assert all(23000 <= p <= 24500 for p in free_ports(5))


def test_a_range_narrower_than_a_cluster_is_refused() -> None:
    with pytest.raises(LauncherError, match="narrower"):
        pick_base_port(nodes=3, port_range=(23000, 23500))


def test_a_taken_port_in_range_is_skipped(listening: socket.socket) -> None:
    port = listening.getsockname()[1]
    # A single-port range around the taken one leaves nothing; one port wider, the free one.
    with pytest.raises(LauncherError, match="fewer than 1 free ports"):
        free_ports(1, port_range=(port, port))
    picked = {free_ports(1, port_range=(port, port + 1), rng=random.Random(seed))[0]
              for seed in range(20)}
    assert picked == {port + 1}


def test_a_cluster_whose_port_is_taken_gets_another_block(listening: socket.socket) -> None:
    taken = listening.getsockname()[1]
    # The range holds two blocks: one starting at the taken port, and the next one up.
    span = max(cluster_ports(2, 0, taken)) - taken + 1
    picked = {pick_base_port(nodes=2, port_range=(taken, taken + span),
                             rng=random.Random(seed)) for seed in range(20)}
    assert picked == {taken + 1}


def test_a_reserved_port_is_never_handed_out() -> None:
    with pytest.raises(LauncherError, match="fewer than 1 free ports"):
        free_ports(1, port_range=(9092, 9094))


def test_bootstrap_picks_again_when_a_port_is_taken_at_the_bind(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Another process may take a port between the check and a node's bind: the launcher
    then fails naming it, and the test's cluster starts on a fresh block and directory."""
    calls: list[tuple[Path, int]] = []

    def bootstrap(directory: Path, nodes: int, controllers: int, base_port: int,
                  overrides: Any, **kwargs: Any) -> ClusterInfo:
        calls.append((directory, base_port))
        if len(calls) == 1:
            raise LauncherError(f"node 1 exited during start-up: cannot listen on "
                                f"127.0.0.1:{base_port}: [Errno 98] Address already in use")
        return ClusterInfo(directory, "id", [])

    monkeypatch.setattr(ports, "bootstrap_quorum", bootstrap)
    info = ports.bootstrap_on_free_ports(tmp_path, nodes=1)
    assert [directory for directory, _ in calls] == [tmp_path, tmp_path / "retry-1"]
    assert info.dir == tmp_path / "retry-1"


def test_bootstrap_passes_other_failures_on(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    def bootstrap(*args: Any, **kwargs: Any) -> ClusterInfo:
        raise LauncherError("node 1 was not ready within 30 s")

    monkeypatch.setattr(ports, "bootstrap_quorum", bootstrap)
    with pytest.raises(LauncherError, match="not ready"):
        ports.bootstrap_on_free_ports(tmp_path, nodes=1)
