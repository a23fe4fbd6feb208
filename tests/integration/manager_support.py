"""What the console's browser tests share: Debian's chromium driven by Playwright (installed
when missing, as CI starts bare), and `raftka manager` run as a subprocess."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

from cluster.testing.waiting import wait_for

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
REFRESH_S = 2


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"browser tests cannot run: {reason}")
    pytest.skip(reason)


def install_missing() -> None:
    """Debian's chromium and Playwright's Python package, installed when root can."""
    if not os.path.exists(CHROMIUM):
        if os.geteuid() != 0 or shutil.which("apt-get") is None:
            _unavailable(f"{CHROMIUM} is missing and apt-get as root is not available")
        for command in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
            if subprocess.run(command, capture_output=True).returncode != 0:
                _unavailable(f"`{' '.join(command)}` failed")
    try:
        import playwright  # noqa: F401
    except ImportError:
        if subprocess.run([sys.executable, "-m", "pip", "install", "playwright"],
                          capture_output=True).returncode != 0:
            _unavailable("the playwright package is missing and pip could not install it")


@contextlib.contextmanager
def chromium(profile: Path) -> Iterator[Any]:
    """One headless chromium (a persistent Playwright context) for a test module."""
    install_missing()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield context
        finally:
            context.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(url: str, headers: dict[str, str] | None = None) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}),
                                    timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def start_manager(servers: str, port: int, *extra: str,
                  headers: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """The console on loopback, sampling every second; ``extra`` options come last (and
    so win)."""
    process = subprocess.Popen([sys.executable, "-m", "broker.cli.main", "manager",
                                "--bootstrap-server", servers,
                                "--listen", f"127.0.0.1:{port}",
                                "--refresh", str(REFRESH_S), "--lag-interval", "1",
                                "--throughput-interval", "1",
                                *extra])
    url = f"http://127.0.0.1:{port}/topics"
    try:
        # 503: the console answers, but reaches no broker.
        wait_for(lambda: process.poll() is not None or status(url, headers) in (200, 401, 503),
                 "the console to answer", 60)
        assert process.poll() is None, "the console exited"
    except BaseException:
        process.kill()  # a console that never answered is not left behind
        process.wait()
        raise
    return process


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM: the console stops cleanly, exit 0."""
    process.terminate()
    try:
        assert process.wait(20) == 0
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise
