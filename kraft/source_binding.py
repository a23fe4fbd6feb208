"""Binding pysyncobj's outgoing peer connections to this member's own address.

pysyncobj's `TcpConnection.connect` creates its socket through the `socket` name of
`pysyncobj.tcp_connection` and connects at once, with no hook to bind first. `install`
replaces that name with a stand-in module whose `socket()` binds each new socket to the
address set for the calling thread by `bound_source` (pysyncobj connects on its tick thread,
one per member, so members in one process do not see each other's address). Every other
attribute is the real `socket` module's.
"""

from __future__ import annotations

import socket as _socket
import threading
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Iterator

import pysyncobj.tcp_connection as _tcp_connection

# Linux: defer the port choice to connect(), so binding the address does not reserve an
# ephemeral port per destination-less bind (socket.IP_BIND_ADDRESS_NO_PORT from 3.12 on).
_IP_BIND_ADDRESS_NO_PORT = getattr(_socket, "IP_BIND_ADDRESS_NO_PORT", 24)

_local = threading.local()


class _BindingSocketModule(ModuleType):
    """The `socket` module, except that `socket()` binds to the thread's source address."""

    def __init__(self) -> None:
        super().__init__("socket")

    def __getattr__(self, name: str) -> Any:
        return getattr(_socket, name)

    @staticmethod
    def socket(family: int = _socket.AF_INET, type: int = _socket.SOCK_STREAM,
               *args: Any) -> _socket.socket:
        sock = _socket.socket(family, type, *args)
        host = getattr(_local, "host", None)
        # Only an address of the socket's own family can be its source (an IPv6 member's
        # connection to an IPv4 peer stays unbound rather than failing).
        if host is not None and family == (_socket.AF_INET6 if ":" in host else _socket.AF_INET):
            try:
                if family == _socket.AF_INET:
                    sock.setsockopt(_socket.IPPROTO_IP, _IP_BIND_ADDRESS_NO_PORT, 1)
                sock.bind((host, 0))
            except OSError:
                sock.close()
                raise
        return sock


def is_installable() -> bool:
    """Whether pysyncobj still creates its peer sockets through a `socket` module name."""
    module = getattr(_tcp_connection, "socket", None)
    return isinstance(module, ModuleType) and hasattr(module, "socket")


def install() -> None:
    """Route pysyncobj's peer sockets through the binding stand-in (idempotent)."""
    if not isinstance(_tcp_connection.socket, _BindingSocketModule):
        _tcp_connection.socket = _BindingSocketModule()  # type: ignore[attr-defined]


@contextmanager
def bound_source(host: str | None) -> Iterator[None]:
    """Sockets pysyncobj creates on this thread inside the block bind to `host` (None: the
    kernel chooses)."""
    previous = getattr(_local, "host", None)
    _local.host = host
    try:
        yield
    finally:
        _local.host = previous
