"""The iptables partition helper: rules cut exactly the named address pair, and every rule
added is removed again, on heal, on an exception, on SIGTERM, and after a SIGKILL."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import textwrap

import pytest

from cluster.testing.network_partition import RULE_TAG, NetworkPartitioner
from cluster.testing.waiting import wait_for
from tests.integration.fault_support import node_hosts, partitioner

pytestmark = pytest.mark.slow


def tagged_rules(iptables: str) -> list[str]:
    listing = subprocess.run([iptables, "-w", "-S", "INPUT"], capture_output=True, text=True,
                             check=True).stdout
    return [line for line in listing.splitlines() if RULE_TAG in line]


def reachable(source: str, destination: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.bind((source, 0))
        sock.settimeout(0.5)
        try:
            sock.connect((destination, port))
        except OSError:
            return False
    return True


@pytest.fixture
def listener() -> tuple[str, int]:
    a, b, _ = node_hosts(3)
    with socket.socket() as server:
        server.bind((b, 0))
        server.listen(16)
        yield server.getsockname()


def test_cut_one_way_and_heal(listener: tuple[str, int]) -> None:
    a, b, c = node_hosts(3)
    port = listener[1]
    with partitioner() as cut:
        before = tagged_rules(cut._iptables)
        cut.drop(a, b)
        assert not reachable(a, b, port)
        assert reachable(c, b, port)  # only the named pair is cut
        assert len(tagged_rules(cut._iptables)) == len(before) + 1
        cut.heal()
        assert reachable(a, b, port)
        assert tagged_rules(cut._iptables) == before


def test_rules_are_removed_when_the_block_raises(listener: tuple[str, int]) -> None:
    a, b, _ = node_hosts(3)
    with pytest.raises(RuntimeError):
        with partitioner() as cut:
            iptables = cut._iptables
            cut.cut(a, b)
            assert len(cut.rules) == 2
            raise RuntimeError("interrupted")
    assert not [r for r in tagged_rules(iptables) if a in r]
    assert reachable(a, b, listener[1])


HOLDER = textwrap.dedent("""
    import sys, time
    from cluster.testing.network_partition import NetworkPartitioner
    with NetworkPartitioner() as cut:
        cut.cut(sys.argv[1], sys.argv[2])
        print("cut", flush=True)
        time.sleep(60)
""")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_rules_of_a_stopped_process_are_removed(signum: int) -> None:
    a, b, _ = node_hosts(3)
    iptables = partitioner()._iptables
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, a, b], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "cut"
        owned = f"{RULE_TAG}:{holder.pid}"
        assert len([r for r in tagged_rules(iptables) if owned in r]) == 2
        holder.send_signal(signum)
        holder.wait(10)
    finally:
        holder.kill()
        holder.wait()
    if signum == signal.SIGKILL:
        # Nothing ran in the killed process: the next partitioner clears its rules.
        assert [r for r in tagged_rules(iptables) if owned in r]
        NetworkPartitioner(iptables).close()
    wait_for(lambda: not [r for r in tagged_rules(iptables) if owned in r],
             "the stopped holder's rules to be gone", 5)
