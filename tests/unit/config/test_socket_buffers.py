"""socket.*.buffer.bytes and replica.socket.receive.buffer.bytes reach the sockets' settings."""

from __future__ import annotations

import pytest

from broker.config import ConfigError, ServerConfig
from broker.network import ServerSettings
from broker.replica_fetcher.settings import FetcherSettings
from tests.unit.config.test_bind_address import BASE


def test_kafka_defaults_reach_the_listener_and_the_fetcher() -> None:
    config = ServerConfig(BASE)
    server = ServerSettings.from_config(config)
    assert (server.send_buffer_bytes, server.receive_buffer_bytes) == (102400, 102400)
    assert FetcherSettings.from_config(config).receive_buffer_bytes == 65536


def test_minus_one_keeps_the_os_default() -> None:
    config = ServerConfig({**BASE, "socket.send.buffer.bytes": "-1",
                           "socket.receive.buffer.bytes": "-1",
                           "replica.socket.receive.buffer.bytes": "-1"})
    server = ServerSettings.from_config(config)
    assert (server.send_buffer_bytes, server.receive_buffer_bytes) == (-1, -1)
    assert FetcherSettings.from_config(config).receive_buffer_bytes == -1


def test_below_minus_one_stops_start_up_naming_the_key() -> None:
    with pytest.raises(ConfigError, match="replica.socket.receive.buffer.bytes"):
        ServerConfig({**BASE, "replica.socket.receive.buffer.bytes": "-2"})
