"""SIGTERM and SIGINT of a node process (broker.cli.stop_signals), in real child processes
whose trio loop either runs freely or is held by a computation that never yields: the first
signal stops gracefully, or at the deadline after flushing; a second one ends it at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

# The child: `busy` holds the loop in plain Python for a minute once started.
CHILD = textwrap.dedent("""
    import sys, time
    import trio
    from clients.cli.errors import configure_logging
    from broker.cli.stop_signals import StopSignals
    from broker.forced_exit import register_flush

    mode, flushed, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
    configure_logging("INFO")

    def flush():
        with open(flushed, "w") as out:
            out.write("flushed")

    async def main():
        shutdown = trio.Event()
        token = trio.lowlevel.current_trio_token()
        signals = StopSignals(lambda: token.run_sync_soon(shutdown.set), timeout)
        signals.install()
        register_flush(flush)
        print("ready", flush=True)
        try:
            if mode == "busy":
                end = time.monotonic() + 60
                while time.monotonic() < end:
                    pass
            await shutdown.wait()
            print("stopped gracefully", flush=True)
        finally:
            signals.uninstall()

    trio.run(main)
""")


def start(tmp_path: Path, mode: str, timeout: float) -> tuple[subprocess.Popen[str], Path]:
    flushed = tmp_path / "flushed"
    child = subprocess.Popen([sys.executable, "-c", CHILD, mode, str(flushed), str(timeout)],
                             cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    time.sleep(0.2)  # inside the computation (busy) or waiting (idle)
    return child, flushed


def finish(child: subprocess.Popen[str], within: float) -> tuple[int, str, float]:
    started = time.monotonic()
    try:
        output, _ = child.communicate(timeout=within + 10)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        pytest.fail("the process outlived its stop")
    return child.returncode, output, time.monotonic() - started


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_first_signal_stops_a_free_loop_gracefully(tmp_path: Path, signum: int) -> None:
    child, flushed = start(tmp_path, "idle", timeout=5)
    child.send_signal(signum)
    status, output, took = finish(child, within=5)
    assert status == 0 and "stopped gracefully" in output and took < 3
    assert not flushed.exists()


def test_a_held_loop_ends_at_the_deadline_with_status_0_after_flushing(tmp_path: Path) -> None:
    child, flushed = start(tmp_path, "busy", timeout=1.0)
    child.send_signal(signal.SIGTERM)
    status, output, took = finish(child, within=1.0)
    assert status == 0, output
    assert took < 2.5, f"the stop took {took:.1f} s with a 1 s timeout"
    assert "did not finish within 1 s" in output and "stopped gracefully" not in output
    assert flushed.read_text() == "flushed"


@pytest.mark.parametrize("second", [signal.SIGTERM, signal.SIGINT])
def test_a_second_signal_ends_a_held_loop_at_once(tmp_path: Path, second: int) -> None:
    child, flushed = start(tmp_path, "busy", timeout=30.0)
    child.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    child.send_signal(second)
    status, output, took = finish(child, within=1.0)
    assert status == 1, output
    assert took < 1.5
    assert f"second signal {signal.Signals(second).name}" in output
    assert flushed.read_text() == "flushed"
