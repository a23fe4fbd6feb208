"""A process's TCP connections read from /proc (Linux), to check which source address a
node's outgoing connections use."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

_ESTABLISHED = "01"
_LISTEN = "0A"


@dataclass(frozen=True)
class TcpSocket:
    """One IPv4 TCP socket: local and remote address, and whether it listens."""

    local: tuple[str, int]
    remote: tuple[str, int]
    listening: bool


def _address(text: str) -> tuple[str, int]:
    """/proc/net/tcp's `0100007F:1F90` (little-endian IPv4 on x86 and ARM) as a pair."""
    host_hex, port_hex = text.split(":")
    host = str(ipaddress.IPv4Address(int.from_bytes(bytes.fromhex(host_hex), "little")))
    return host, int(port_hex, 16)


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for entry in fd_dir.iterdir():
        try:
            target = os.readlink(entry)
        except OSError:
            continue  # closed since the listing
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return inodes


def tcp_sockets(pid: int) -> list[TcpSocket]:
    """The established and listening IPv4 TCP sockets process `pid` holds."""
    inodes = _socket_inodes(pid)
    found = []
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        state, inode = fields[3], fields[9]
        if inode in inodes and state in (_ESTABLISHED, _LISTEN):
            found.append(TcpSocket(_address(fields[1]), _address(fields[2]),
                                   state == _LISTEN))
    return found


def outgoing_connections(pid: int) -> list[TcpSocket]:
    """Established connections `pid` opened: those whose local port is none of its
    listening ports."""
    sockets = tcp_sockets(pid)
    listening = {s.local[1] for s in sockets if s.listening}
    return [s for s in sockets if not s.listening and s.local[1] not in listening]
