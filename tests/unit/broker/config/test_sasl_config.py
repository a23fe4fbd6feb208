"""SASL listener settings: mechanisms, PLAIN users from the listener's JAAS config, the
inter-broker credentials, and start-up refusals naming the key."""

from __future__ import annotations

import pytest

from broker.config import ConfigError, ServerConfig
from clients.net.jaas import JaasConfigError, parse_jaas

BASE = {
    "process.roles": "broker,controller", "node.id": "1",
    "controller.quorum.voters": "1@127.0.0.1:9093", "controller.listener.names": "CONTROLLER",
    "listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9094,"
                 "CONTROLLER://127.0.0.1:9093",
}
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" user_admin="admin-secret" '
              'user_alice="al;ice\\"s";')


def config(**extra: str) -> ServerConfig:
    return ServerConfig({**BASE, **extra})


def test_default_mechanisms_are_scram_and_a_plaintext_listener_has_no_sasl() -> None:
    c = config()
    assert set(c.sasl_listeners) == {"SASL_PLAINTEXT"}
    assert c.sasl_listeners["SASL_PLAINTEXT"].mechanisms == ("SCRAM-SHA-256", "SCRAM-SHA-512")
    assert c.inter_broker_sasl is None
    assert c.unknown_keys == []


def test_plain_users_come_from_the_listener_jaas_config() -> None:
    c = config(**{"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
                  "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS})
    listener = c.sasl_listeners["SASL_PLAINTEXT"]
    assert listener.plain_users == {"admin": "admin-secret", "alice": 'al;ice"s'}
    assert "admin-secret" not in repr(listener)
    assert c.unknown_keys == []


def test_listener_prefixed_mechanisms_win() -> None:
    c = config(**{"sasl.enabled.mechanisms": "PLAIN",
                  "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-512"})
    assert c.sasl_listeners["SASL_PLAINTEXT"].mechanisms == ("SCRAM-SHA-512",)


@pytest.mark.parametrize("key", ["sasl.enabled.mechanisms",
                                 "listener.name.sasl_plaintext.sasl.enabled.mechanisms"])
def test_an_unsupported_mechanism_stops_start_up_naming_the_key(key: str) -> None:
    with pytest.raises(ConfigError) as failure:
        config(**{key: "GSSAPI"})
    assert failure.value.key == key
    assert "GSSAPI is not supported" in str(failure.value)


def test_plain_without_jaas_users_is_refused() -> None:
    with pytest.raises(ConfigError) as failure:
        config(**{"sasl.enabled.mechanisms": "PLAIN"})
    assert failure.value.key == "listener.name.sasl_plaintext.plain.sasl.jaas.config"


def test_a_malformed_jaas_config_is_refused_without_echoing_it() -> None:
    key = "listener.name.sasl_plaintext.plain.sasl.jaas.config"
    with pytest.raises(ConfigError) as failure:
        config(**{"sasl.enabled.mechanisms": "PLAIN", key: 'Module required user_a="secret"'})
    assert failure.value.key == key
    assert "secret" not in str(failure.value)


def test_inter_broker_sasl_takes_username_and_password_from_the_jaas_config() -> None:
    extra = {"inter.broker.listener.name": "SASL_PLAINTEXT",
             "sasl.mechanism.inter.broker.protocol": "PLAIN",
             "sasl.enabled.mechanisms": "PLAIN",
             "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS}
    creds = config(**extra).inter_broker_sasl
    assert creds is not None
    assert (creds.mechanism, creds.username, creds.password) == ("PLAIN", "admin",
                                                                  "admin-secret")
    with pytest.raises(ConfigError) as failure:
        config(**{**extra, "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"})
    assert failure.value.key == "sasl.mechanism.inter.broker.protocol"
    with pytest.raises(ConfigError) as failure:
        config(**{"inter.broker.listener.name": "SASL_PLAINTEXT"})
    assert failure.value.key == "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"


def test_jaas_parsing() -> None:
    entry = parse_jaas('a.b.C required x=1 y="two words";')
    assert (entry.module, entry.flag, entry.options) == ("a.b.C", "required",
                                                         {"x": "1", "y": "two words"})
    for bad in ("", "a.b.C", 'a.b.C required x="1"', "a.b.C required =1;"):
        with pytest.raises(JaasConfigError):
            parse_jaas(bad)
