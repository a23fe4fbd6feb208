"""raftka.client.bind.address: the source address of a node's outgoing connections."""

from __future__ import annotations

import pytest

from broker.config import ConfigError, ServerConfig
from broker.config.bind_address import client_bind_address, source_address_for
from broker.config.endpoints import Listener

BASE = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.quorum.voters": "1@127.0.0.11:9093",
    "listeners": "PLAINTEXT://127.0.0.11:9092,CONTROLLER://127.0.0.11:9093",
    "controller.listener.names": "CONTROLLER",
}


def listener(host: str) -> Listener:
    return Listener("PLAINTEXT", host, 9092, "PLAINTEXT")


def test_defaults_to_the_first_listener_host() -> None:
    assert ServerConfig(BASE).client_bind_address == "127.0.0.11"


def test_configured_address_wins() -> None:
    config = ServerConfig({**BASE, "raftka.client.bind.address": "127.0.0.12"})
    assert config.client_bind_address == "127.0.0.12"


@pytest.mark.parametrize("host", ["", "0.0.0.0", "::", "localhost"])
def test_no_binding_for_a_wildcard_or_named_listener(host: str) -> None:
    assert client_bind_address(None, [listener(host)]) is None


def test_empty_value_lets_the_system_choose() -> None:
    assert client_bind_address("", [listener("127.0.0.11")]) is None


def test_ipv6_literal() -> None:
    assert client_bind_address("[::1]", []) == "::1"


@pytest.mark.parametrize("value", ["localhost", "0.0.0.0", "300.1.1.1"])
def test_bad_values_stop_start_up_naming_the_key(value: str) -> None:
    with pytest.raises(ConfigError) as failure:
        ServerConfig({**BASE, "raftka.client.bind.address": value})
    assert failure.value.key == "raftka.client.bind.address"


@pytest.mark.parametrize("bind, destination, expected", [
    ("127.0.0.11", "127.0.0.12", "127.0.0.11"),
    ("127.0.0.11", "::1", None),
    ("::1", "[::1]", "::1"),
    ("::1", "127.0.0.12", None),
    ("127.0.0.11", "broker-2.local", "127.0.0.11"),
    (None, "127.0.0.12", None),
])
def test_source_only_of_the_destinations_family(bind, destination, expected) -> None:
    assert source_address_for(bind, destination) == expected
