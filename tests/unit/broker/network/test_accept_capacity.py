"""A listener outlives running out of descriptors: accept() failing with EMFILE is retried,
and the connection waiting in the backlog is served once descriptors are given back. The
server runs in a child process with a low open-files limit, so this process keeps its own."""

from __future__ import annotations

import select
import socket
import subprocess
import sys
import time

import pytest

from tests.unit.broker.network.test_server import api_versions_frame, decode_api_versions

pytest.importorskip("resource")

CHILD = '''
import logging, os, resource, sys
import trio
from tests.unit.broker.network.test_server import api_versions_router
from tests.unit.broker.network.wire import running_server

logging.basicConfig(stream=sys.stderr, level=logging.INFO)
resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

async def main():
    async with running_server(api_versions_router()) as (server, address):
        held = []
        try:
            while True:
                held.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            pass
        print(address[1], flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)  # the parent saw accept fail
        for fd in held:
            os.close(fd)
        await trio.to_thread.run_sync(sys.stdin.readline)  # the parent is done

trio.run(main)
'''


def _read_frame(sock: socket.socket) -> bytes:
    size = int.from_bytes(_exact(sock, 4), "big")
    return _exact(sock, size)


def _exact(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError("closed by the server")
        data += chunk
    return data


def test_accept_failing_for_want_of_descriptors_is_retried_until_they_are_back() -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = int(child.stdout.readline())  # type: ignore[union-attr]
        with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
            sock.sendall(api_versions_frame(3))
            deadline = time.monotonic() + 20
            log = ""
            while "cannot accept connections" not in log:
                assert time.monotonic() < deadline, f"accept never failed: {log[-2000:]}"
                ready, _, _ = select.select([child.stderr], [], [], 1.0)
                if ready:
                    log += child.stderr.readline()  # type: ignore[union-attr]
            assert child.poll() is None, log
            child.stdin.write("\n")  # type: ignore[union-attr]
            child.stdin.flush()  # type: ignore[union-attr]
            answer = decode_api_versions(_read_frame(sock))
        assert answer._header.correlation_id == 3
        assert "Too many open files" in log
    finally:
        if child.poll() is None:
            child.stdin.write("\n")  # type: ignore[union-attr]
            child.stdin.flush()  # type: ignore[union-attr]
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
