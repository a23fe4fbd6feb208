"""socket.*.buffer.bytes and replica.socket.receive.buffer.bytes reach the sockets' settings."""

from __future__ import annotations

import pytest

from broker.config import ConfigError, ServerConfig
from broker.network import ServerSettings
from broker.replica_fetcher.settings import FetcherSettings
from tests.unit.broker.config.test_bind_address import BASE


def test_by_default_the_os_sizes_every_buffer() -> None:
    # Kafka's defaults are 102400 and 65536; Raftka leaves the kernel's autotuning on (see
    # the README's network keys): a 1 MB batch then crosses in one or two wake-ups.
    config = ServerConfig(BASE)
    server = ServerSettings.from_config(config)
    assert (server.send_buffer_bytes, server.receive_buffer_bytes) == (-1, -1)
    assert FetcherSettings.from_config(config).receive_buffer_bytes == -1


def test_set_sizes_reach_the_listener_and_the_fetcher() -> None:
    config = ServerConfig({**BASE, "socket.send.buffer.bytes": "102400",
                           "socket.receive.buffer.bytes": "102400",
                           "replica.socket.receive.buffer.bytes": "65536"})
    server = ServerSettings.from_config(config)
    assert (server.send_buffer_bytes, server.receive_buffer_bytes) == (102400, 102400)
    assert FetcherSettings.from_config(config).receive_buffer_bytes == 65536


def test_below_minus_one_stops_start_up_naming_the_key() -> None:
    with pytest.raises(ConfigError, match="replica.socket.receive.buffer.bytes"):
        ServerConfig({**BASE, "replica.socket.receive.buffer.bytes": "-2"})
