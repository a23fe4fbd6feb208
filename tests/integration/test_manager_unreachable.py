"""`raftka manager` over a cluster it cannot reach: every page, form and action answers
within the page timeout, all of them at once, with a banner naming what could not be
reached (no broker at the bootstrap address; a bootstrap address that accepts connections
but never answers; a metrics endpoint that never answers); and `--listen` on an address it
cannot bind stops it with one line naming the address. Real consoles, real sockets; no
cluster is started."""

from __future__ import annotations

import html
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

import pytest

from cluster.testing.waiting import wait_for
from tests.integration.manager_support import free_port, start_manager, stop

PAGE_TIMEOUT_S = 2
# What an answer may take beyond the page timeout: rendering, on a loaded machine.
SLACK_S = 3.0
# Where a test gives up on an answer (the old console never answered).
GIVE_UP_S = PAGE_TIMEOUT_S + SLACK_S + 5

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def silent_port() -> Iterator[int]:
    """A port that accepts connections (the kernel completes them into the backlog) and
    never answers on them."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(512)
        yield sock.getsockname()[1]


def _console(bootstrap: str, *extra: str) -> Iterator[str]:
    port = free_port()
    process = start_manager(bootstrap, port, "--page-timeout", str(PAGE_TIMEOUT_S), *extra)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process)


@pytest.fixture(scope="module")
def dead_bootstrap() -> str:
    return f"127.0.0.1:{free_port()}"  # nothing listens there once free_port returns


@pytest.fixture(scope="module")
def console(dead_bootstrap: str) -> Iterator[str]:
    yield from _console(dead_bootstrap)


@pytest.fixture(scope="module")
def silent_console(silent_port: int) -> Iterator[str]:
    yield from _console(f"127.0.0.1:{silent_port}", "--metrics-endpoint",
                        f"1=http://127.0.0.1:{silent_port}/metrics")


def _fetch(url: str, form: dict[str, str] | None = None) -> tuple[int, float, str]:
    """(status, seconds taken, body); status 0 when no answer came in GIVE_UP_S."""
    data = None if form is None else urllib.parse.urlencode(form).encode()
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, data, timeout=GIVE_UP_S) as response:
            return response.status, time.monotonic() - started, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, time.monotonic() - started, exc.read().decode()
    except OSError:
        return 0, time.monotonic() - started, ""


def _banner(body: str) -> list[str]:
    found = re.search(r'<div class="banner" id="problems".*?</div>', body, re.S)
    return [html.unescape(line)
            for line in re.findall(r"<li>(.*?)</li>", found.group(0) if found else "")]


def _error(body: str) -> str:
    found = re.search(r'id="(?:error|result)">(.*?)</p>', body, re.S)
    return html.unescape(found.group(1)) if found else ""


def _csrf(console: str) -> str:
    _, _, body = _fetch(console + "/actions/create-topic")
    found = re.search(r'name="csrf" value="([^"]+)"', body)
    assert found, "the create-topic form carries no CSRF token"
    return found.group(1)


CLUSTER_PAGES = ["/", "/topics", "/topics/orders", "/topics/orders/messages?partition=0",
                 "/topics/orders/reassignment", "/groups", "/groups/billing"]
FORMS = ["/groups/billing/actions", "/actions/create-topic", "/throughput"]


def test_every_page_and_action_answers_in_time_naming_the_unreachable_bootstrap(
        console: str, dead_bootstrap: str) -> None:
    csrf = _csrf(console)
    actions = {
        "create-topic": {"topic": "t", "partitions": "1", "replication_factor": "1",
                         "configs": "", "confirm": "yes"},
        "produce": {"topic": "orders", "partition": "", "key": "", "value": "v",
                    "headers": "", "confirm": "yes"},
        "reset-offsets": {"group": "billing", "to": "earliest", "topic": ""},
        "reassign-partitions": {"topic": "orders", "brokers": "1"},
    }
    requests = ([(console + path, None) for path in CLUSTER_PAGES + FORMS]
                + [(console + "/actions/" + kind, {"csrf": csrf, **form})
                   for kind, form in actions.items()])
    # All at once: none may wait for another.
    with ThreadPoolExecutor(len(requests)) as pool:
        answers = dict(zip([("POST " if form else "") + url.removeprefix(console)
                            for url, form in requests],
                           pool.map(lambda r: _fetch(*r), requests)))
    unreachable = f"no broker reachable at {dead_bootstrap}"
    for path, (status, took, body) in answers.items():
        assert took < PAGE_TIMEOUT_S + SLACK_S, f"{path} took {took:.1f} s"
        if path in FORMS:
            assert status == 200, path
        elif path.startswith("POST "):
            assert status == 503, path
            assert unreachable in _error(body) or any(
                dead_bootstrap in line for line in _banner(body)), (path, _error(body))
        else:
            assert status == 503, path
            assert any(line.startswith(unreachable) for line in _banner(body)), (
                path, _banner(body))
    # The other panels say they are unavailable; the page itself still renders.
    assert 'id="brokers-unavailable"' in answers["/"][2]
    assert 'id="quorum-unavailable"' in answers["/"][2]
    assert 'id="configs-unavailable"' in answers["/topics/orders"][2]
    # The throughput sampler's failure shows on its page (sampled every second).
    wait_for(lambda: any(line.startswith("traffic not sampled from offsets")
                         for line in _banner(_fetch(console + "/throughput")[2])),
             "the throughput page to say the traffic could not be sampled", 30)


def test_a_silent_bootstrap_and_metrics_endpoint_are_named(silent_console: str,
                                                           silent_port: int) -> None:
    address = f"127.0.0.1:{silent_port}"
    for path in ("/", "/topics/orders"):
        status, took, body = _fetch(silent_console + path)
        assert took < PAGE_TIMEOUT_S + SLACK_S, f"{path} took {took:.1f} s"
        assert status == 503, path
        assert any(address in line and ("no answer from the cluster" in line
                                        or "timed out" in line)
                   for line in _banner(body)), (path, _banner(body))
    metrics = f"metrics of broker 1 unreachable at http://{address}/metrics"
    wait_for(lambda: any(line.startswith(metrics)
                         for line in _banner(_fetch(silent_console + "/throughput")[2])),
             "the throughput page to name the silent metrics endpoint", 30)


def _managers(*argvs: list[str]) -> list[tuple[int, str]]:
    """(exit status, stderr) of `raftka manager` with each argument list, run at once."""
    processes = [subprocess.Popen([sys.executable, "-m", "broker.cli.main", "manager",
                                   "--bootstrap-server", "127.0.0.1:9", *argv],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for argv in argvs]
    results = []
    for process in processes:
        try:
            _, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
        results.append((process.returncode, err))
    return results


def test_listen_on_a_taken_port_or_an_unknown_host_is_one_line_naming_it(
        tmp_path: Path) -> None:
    users = tmp_path / "users"
    users.write_text("admin:secret\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        (taken_status, taken_err), (unknown_status, unknown_err) = _managers(
            ["--listen", f"127.0.0.1:{port}"],
            ["--listen", "no-such-host.invalid:8089", "--password-file", str(users)])
    assert taken_status == 1
    assert taken_err == (f"raftka manager: cannot listen on 127.0.0.1:{port}: address "
                         f"already in use\n")
    assert unknown_status == 1
    assert unknown_err.startswith("raftka manager: cannot listen on "
                                  "no-such-host.invalid:8089: ")
    assert unknown_err.count("\n") == 1
