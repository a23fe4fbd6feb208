"""Network partitions between nodes on their own loopback addresses, as iptables rules.

`NetworkPartitioner` adds DROP rules for (source, destination) address pairs, one
direction or both, and removes every rule it added on `heal`, on leaving its `with` block,
at interpreter exit, and on SIGTERM. Each rule carries a comment naming the owning process,
so `remove_stale_rules` can clear rules left by a process killed outright.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import threading
from types import FrameType
from typing import Callable

RULE_TAG = "raftka-partition"
APT_TIMEOUT_S = 300


class PartitionToolError(Exception):
    """iptables is missing, cannot be installed, or may not change the firewall here."""


def _run(argv: list[str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def ensure_iptables() -> str:
    """The iptables executable, installed from Debian's packages when missing and this
    process is root; PartitionToolError saying why when it cannot be used."""
    path = shutil.which("iptables")
    if path is None:
        if os.geteuid() != 0:
            raise PartitionToolError("iptables is not installed and installing it needs root")
        if shutil.which("apt-get") is None:
            raise PartitionToolError("iptables is not installed and apt-get is not available")
        for argv in (["apt-get", "update"],
                     ["apt-get", "install", "-y", "--no-install-recommends", "iptables"]):
            result = _run(argv, timeout=APT_TIMEOUT_S)
            if result.returncode != 0:
                raise PartitionToolError(f"{' '.join(argv)} failed: "
                                         f"{result.stderr.strip().splitlines()[-1:]}")
        path = shutil.which("iptables")
        if path is None:
            raise PartitionToolError("apt-get installed iptables but it is not on PATH")
    probe = _run([path, "-w", "-L", "INPUT", "-n"])
    if probe.returncode != 0:
        raise PartitionToolError(f"iptables cannot read the firewall (needs root and "
                                 f"CAP_NET_ADMIN): {probe.stderr.strip()}")
    return path


def _owner_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_rules(iptables: str) -> int:
    """Delete tagged rules whose owning process is gone; returns how many."""
    listing = _run([iptables, "-w", "-S", "INPUT"]).stdout.splitlines()
    removed = 0
    for line in listing:
        if f"{RULE_TAG}:" not in line or not line.startswith("-A INPUT"):
            continue
        owner = line.split(f"{RULE_TAG}:", 1)[1].split()[0].strip('"')
        if owner.isdigit() and not _owner_running(int(owner)):
            args = line.split()[2:]
            args = [arg.strip('"') for arg in args]
            if _run([iptables, "-w", "-D", "INPUT", *args]).returncode == 0:
                removed += 1
    return removed


class NetworkPartitioner:
    """Drops traffic between address pairs; removes everything it added on `heal`."""

    def __init__(self, iptables: str | None = None) -> None:
        self._iptables = iptables or ensure_iptables()
        self._rules: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._previous_sigterm: Callable[[int, FrameType | None], object] | int | None = None
        remove_stale_rules(self._iptables)
        atexit.register(self.heal)

    @property
    def rules(self) -> list[tuple[str, str]]:
        """The (source, destination) pairs whose packets are dropped now."""
        return list(self._rules)

    def drop(self, source: str, destination: str) -> None:
        """Drop packets from `source` to `destination` (one direction)."""
        with self._lock:
            if (source, destination) in self._rules:
                return
            # Recorded first: an interrupt between the two steps leaves an extra delete
            # attempt (harmless), never an untracked rule.
            self._rules.append((source, destination))
            result = _run([self._iptables, "-w", "-I", "INPUT", *self._match(source, destination)])
            if result.returncode != 0:
                self._rules.remove((source, destination))
                raise PartitionToolError(f"iptables could not add a rule: {result.stderr.strip()}")

    def cut(self, a: str, b: str, both_ways: bool = True) -> None:
        """Drop a -> b, and b -> a unless `both_ways` is False."""
        self.drop(a, b)
        if both_ways:
            self.drop(b, a)

    def isolate(self, host: str, others: list[str]) -> None:
        """Cut `host` from each of `others`, both ways."""
        for other in others:
            self.cut(host, other)

    def heal(self) -> None:
        """Remove every rule this partitioner added."""
        with self._lock:
            while self._rules:
                source, destination = self._rules[-1]
                _run([self._iptables, "-w", "-D", "INPUT", *self._match(source, destination)])
                self._rules.pop()

    def close(self) -> None:
        self.heal()
        atexit.unregister(self.heal)

    def _match(self, source: str, destination: str) -> list[str]:
        return ["-s", source, "-d", destination, "-m", "comment", "--comment",
                f"{RULE_TAG}:{os.getpid()}", "-j", "DROP"]

    def __enter__(self) -> NetworkPartitioner:
        if threading.current_thread() is threading.main_thread():
            if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
                # SIGTERM's default ends the process without running `finally` or atexit.
                self._previous_sigterm = signal.signal(signal.SIGTERM, _exit_on_sigterm)
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.close()
        finally:
            if self._previous_sigterm is not None:
                signal.signal(signal.SIGTERM, self._previous_sigterm)
                self._previous_sigterm = None


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)
