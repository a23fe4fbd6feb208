"""Socket buffer sizes as Kafka's `*.buffer.bytes` settings give them (-1: the OS default)."""

from __future__ import annotations

import socket
from typing import Any

OS_DEFAULT = -1


def apply_buffer_sizes(sock: Any, send_bytes: int = OS_DEFAULT,
                       receive_bytes: int = OS_DEFAULT) -> None:
    """Set SO_SNDBUF / SO_RCVBUF on `sock` (a socket or trio socket) for each size that is
    not -1. An explicit size turns off the kernel's autotuning of that buffer, as in Kafka."""
    if send_bytes != OS_DEFAULT:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_bytes)
    if receive_bytes != OS_DEFAULT:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_bytes)
