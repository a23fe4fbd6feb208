"""The network keys: max.connections.per.ip.overrides in Kafka's format, listener-prefixed
max.connections, the backlog and timeout keys, and the cross-key checks Kafka makes; a bad
value stops start-up naming the key."""

from __future__ import annotations

import logging

import pytest

from broker.config import ConfigError
from broker.config.network_limits import (
    normalise_address,
    parse_ip_overrides,
    resolve_overrides,
)
from tests.unit.broker.config.test_server_config import assert_rejected, config


def test_overrides_in_kafkas_format() -> None:
    assert parse_ip_overrides("hostName:100, 127.0.0.1:200 ,::1:5,fe80::1%eth0:7") == {
        "hostName": 100, "127.0.0.1": 200, "::1": 5, "fe80::1%eth0": 7}
    assert parse_ip_overrides("") == {}
    assert parse_ip_overrides("  ") == {}


@pytest.mark.parametrize("text", ["host", "host:", ":5", "host:many", "host:-1",
                                  "ho st:1", "a:1,,b:2", "h/x:3", "host:99999999999"])
def test_bad_overrides_name_the_key(text: str) -> None:
    with pytest.raises(ConfigError) as failure:
        parse_ip_overrides(text)
    assert failure.value.key == "max.connections.per.ip.overrides"


def test_overrides_resolve_every_address_of_a_host() -> None:
    def resolve(host: str) -> list[str]:
        return {"db": ["10.0.0.1", "::ffff:10.0.0.2"], "127.0.0.1": ["127.0.0.1"]}[host]

    assert resolve_overrides({"db": 3, "127.0.0.1": 9}, resolve=resolve) == {
        "10.0.0.1": 3, "10.0.0.2": 3, "127.0.0.1": 9}

    def unknown(host: str) -> list[str]:
        raise OSError("Name or service not known")

    with pytest.raises(ConfigError, match="cannot resolve 'nowhere'"):
        resolve_overrides({"nowhere": 1}, resolve=unknown)


def test_addresses_are_compared_in_one_spelling() -> None:
    assert normalise_address("::ffff:127.0.0.1") == "127.0.0.1"
    assert normalise_address("0:0:0:0:0:0:0:1") == "::1"
    assert normalise_address("fe80::1%eth0") == "fe80::1"


def test_defaults() -> None:
    limits = config().network_limits
    assert limits.max_connections_per_ip == 2**31 - 1
    assert limits.per_ip_overrides == {} and limits.per_listener == {}
    assert limits.queued_max_requests == 500
    assert limits.queued_max_request_bytes == 209715200
    assert limits.request_read_timeout_ms == 30000
    assert limits.shutdown_timeout_ms == 30000
    assert limits.controlled_shutdown_timeout_s == 15.0
    assert limits.shutdown_grace_s == 7.5


def test_configured_limits() -> None:
    limits = config(**{"max.connections.per.ip": "0",
                       "max.connections.per.ip.overrides": "localhost:4,10.1.2.3:7",
                       "listener.name.plaintext.max.connections": "20",
                       "queued.max.request.bytes": "-1"}).network_limits
    assert limits.per_ip_overrides["127.0.0.1"] == 4
    assert limits.per_ip_overrides["10.1.2.3"] == 7
    assert limits.per_listener == {"PLAINTEXT": 20}
    assert limits.queued_max_request_bytes == -1


def test_listener_limit_for_no_listener_is_ignored_with_a_warning(caplog) -> None:
    caplog.set_level(logging.WARNING)
    limits = config(**{"listener.name.external.max.connections": "5"}).network_limits
    assert limits.per_listener == {}
    assert any("listener.name.external.max.connections" in r.getMessage()
               for r in caplog.records)
    assert not any("unknown configuration" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(("key", "changes"), [
    ("max.connections.per.ip", {"max.connections.per.ip": "0"}),
    ("max.connections.per.ip", {"max.connections.per.ip": "-1"}),
    ("max.connections.per.ip.overrides", {"max.connections.per.ip.overrides": "a:b"}),
    ("listener.name.plaintext.max.connections",
     {"listener.name.plaintext.max.connections": "-2"}),
    ("listener.name.plaintext.max.connections",
     {"listener.name.plaintext.max.connections": "lots"}),
    ("queued.max.requests", {"queued.max.requests": "0"}),
    ("queued.max.request.bytes", {"queued.max.request.bytes": "1000"}),
    ("raftka.socket.request.read.timeout.ms", {"raftka.socket.request.read.timeout.ms": "0"}),
    ("raftka.shutdown.timeout.ms", {"raftka.shutdown.timeout.ms": "0"}),
    ("connections.max.idle.ms", {"connections.max.idle.ms": "0"}),
    ("connections.max.idle.ms", {"connections.max.idle.ms": "-5"}),
    ("connection.failed.authentication.delay.ms",
     {"connections.max.idle.ms": "100", "connection.failed.authentication.delay.ms": "100"}),
])
def test_bad_values_stop_start_up_naming_the_key(key: str, changes: dict[str, str]) -> None:
    assert_rejected(key, **changes)


def test_idle_timeout_minus_one_means_never() -> None:
    from broker.network import ServerSettings

    settings = ServerSettings.from_config(config(**{"connections.max.idle.ms": "-1"}))
    assert settings.idle_timeout_s == float("inf")
