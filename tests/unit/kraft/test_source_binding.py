"""pysyncobj's peer sockets bind to the member's own address before connecting."""

from __future__ import annotations

import socket
import threading

import pysyncobj.tcp_connection as tcp_connection

from kraft import source_binding


def test_sockets_bind_to_the_threads_source_address() -> None:
    source_binding.install()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with source_binding.bound_source("127.0.0.7"):
            client = tcp_connection.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        unbound = tcp_connection.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        with client, unbound:
            client.connect(server.getsockname())
            unbound.connect(server.getsockname())
            assert client.getsockname()[0] == "127.0.0.7"
            assert unbound.getsockname()[0] == "127.0.0.1"


def test_the_address_is_per_thread() -> None:
    source_binding.install()
    seen: list[str] = []

    def other_thread() -> None:
        with tcp_connection.socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            seen.append(sock.getsockname()[0])

    with source_binding.bound_source("127.0.0.7"):
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
    assert seen == ["0.0.0.0"]


def test_everything_else_is_the_socket_module() -> None:
    source_binding.install()
    assert tcp_connection.socket.error is OSError
    assert tcp_connection.socket.SOL_SOCKET == socket.SOL_SOCKET
    assert source_binding.is_installable()


def test_an_address_of_the_other_family_is_not_bound() -> None:
    source_binding.install()
    with source_binding.bound_source("::1"):
        with tcp_connection.socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            assert sock.getsockname() == ("0.0.0.0", 0)
