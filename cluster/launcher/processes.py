"""Starting node processes detached, tracking them by pid file, stopping them."""

from __future__ import annotations

import errno
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from cluster.launcher.layout import NodeInfo

logger = logging.getLogger(__name__)

# Children started by this process, so stopping them can reap them (no zombies).
_children: dict[int, subprocess.Popen[bytes]] = {}


class LauncherError(Exception):
    """The launcher could not do what was asked; the message says why."""


def check_ports_free(nodes: list[NodeInfo]) -> None:
    """Fail fast, naming node and port, when a port the cluster needs is taken."""
    for node in nodes:
        for purpose, port in node.ports().items():
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    probe.bind((node.host, port))
                except OSError as exc:
                    raise LauncherError(f"port {port} ({purpose} of node {node.node_id}) is "
                                        f"already in use: {exc.strerror}") from None


def start_process(node: NodeInfo) -> int:
    """`raftka server start` for the node in its own session; output to server.log."""
    node.dir.mkdir(parents=True, exist_ok=True)
    with open(node.log_path, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "broker.cli.main", "server", "start", str(node.config_path)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, cwd=node.dir)
    _children[process.pid] = process
    node.pid_path.write_text(f"{process.pid}\n")
    return process.pid


def read_pid(node: NodeInfo) -> int | None:
    try:
        return int(node.pid_path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def is_running(pid: int, node: NodeInfo | None = None) -> bool:
    """True while the process lives (zombies count as gone); with `node`, also checks the
    pid still runs that node's config, so a recycled pid is not mistaken for it."""
    child = _children.get(pid)
    if child is not None:
        return child.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return node is None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return False
        if node is not None:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            return str(node.config_path).encode() in cmdline
    except (OSError, IndexError):
        pass
    return True


def exit_code(pid: int) -> int | None:
    child = _children.get(pid)
    return None if child is None else child.poll()


def stop_process(node: NodeInfo, kill: bool = False, timeout: float = 30.0) -> bool:
    """Signal the node (SIGTERM, or SIGKILL with `kill`), wait for it to exit, remove the pid
    file. Escalates to SIGKILL after `timeout`. Returns False if no process was running."""
    return bool(stop_processes([node], kill=kill, timeout=timeout))


def stop_processes(nodes: list[NodeInfo], kill: bool = False, timeout: float = 30.0) -> list[int]:
    """Signal every node first, then wait for all of them, so their shutdowns overlap.

    Returns the ids of the nodes that were running. A node still alive `timeout` seconds after
    its signal gets SIGKILL.
    """
    running: list[tuple[NodeInfo, int]] = []
    for node in nodes:
        pid = read_pid(node)
        if pid is None or not is_running(pid, node):
            node.pid_path.unlink(missing_ok=True)
            continue
        _signal(pid, signal.SIGKILL if kill else signal.SIGTERM)
        running.append((node, pid))
    deadline = time.monotonic() + timeout
    for node, pid in running:
        while is_running(pid):
            if time.monotonic() > deadline:
                logger.warning("node %d (pid %d) ignored SIGTERM for %.0f s; killing it",
                               node.node_id, pid, timeout)
                _signal(pid, signal.SIGKILL)
                deadline = time.monotonic() + timeout
            time.sleep(0.05)
        child = _children.pop(pid, None)
        if child is not None:
            child.wait()
        node.pid_path.unlink(missing_ok=True)
    return [node.node_id for node, _ in running]


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except OSError as exc:
        if exc.errno != errno.ESRCH:
            raise


def log_tail(node: NodeInfo, lines: int = 30) -> str:
    try:
        text = node.log_path.read_text(errors="replace")
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])
