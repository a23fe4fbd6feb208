"""TLS settings: Kafka's ssl.* keys, listener.name prefixes, PEM-only stores, and start-up
refusals that name the key at fault."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
import trustme

from broker.config import ConfigError, ServerConfig
from clients.admin import AdminConfig
from clients.common.settings import ConfigError as ClientConfigError
from clients.net.tls import TlsSettings
from clients.net.tls_context import build_context, openssl_cipher_name

BASE = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.quorum.voters": "1@127.0.0.1:9093",
    "listeners": "SSL://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "SSL",
}


@pytest.fixture(scope="module")
def pem(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("pem")
    ca = trustme.CA()
    issued = ca.issue_cert("127.0.0.1")
    files = {"ca": directory / "ca.pem", "server": directory / "server.pem",
             "encrypted": directory / "encrypted.pem", "junk": directory / "store.jks"}
    ca.cert_pem.write_to_path(str(files["ca"]))
    issued.private_key_and_cert_chain_pem.write_to_path(str(files["server"]))
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(issued.private_key_pem.bytes(), None)
    encrypted = key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.PKCS8,
                                  serialization.BestAvailableEncryption(b"s3cret"))
    files["encrypted"].write_bytes(encrypted + b"".join(c.bytes() for c in issued.cert_chain_pems))
    files["junk"].write_bytes(b"\xfe\xed\xfe\xed" + bytes(100))
    return files


def server_config(**changes: str) -> ServerConfig:
    props = dict(BASE)
    props.update(changes)
    return ServerConfig(props)


def refused_key(**changes: str) -> str:
    with pytest.raises(ConfigError) as failure:
        server_config(**changes)
    assert str(failure.value).startswith(failure.value.key)
    return failure.value.key


def test_an_ssl_listener_gets_a_server_context(pem: dict[str, Path]) -> None:
    config = server_config(**{"ssl.keystore.location": str(pem["server"]),
                              "ssl.truststore.location": str(pem["ca"]),
                              "ssl.client.auth": "required"})
    context = config.ssl_server_contexts()["SSL"]
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert config.inter_broker_security.protocol == "SSL"
    assert config.inter_broker_security.ssl_context is not None
    assert config.inter_broker_security.ssl_context.check_hostname
    assert config.controller_security.protocol == "PLAINTEXT"


def test_an_ssl_listener_without_a_keystore_stops_start_up() -> None:
    assert refused_key() == "ssl.keystore.location"


def test_a_missing_keystore_file_names_its_key(tmp_path: Path) -> None:
    assert refused_key(**{"ssl.keystore.location": str(tmp_path / "nope.pem")}) == \
        "ssl.keystore.location"


def test_the_listener_prefix_wins_and_is_the_key_named(pem: dict[str, Path],
                                                       tmp_path: Path) -> None:
    key = refused_key(**{"ssl.keystore.location": str(pem["server"]),
                         "listener.name.ssl.ssl.keystore.location": str(tmp_path / "x.pem")})
    assert key == "listener.name.ssl.ssl.keystore.location"
    config = server_config(**{"ssl.keystore.location": str(tmp_path / "x.pem"),
                              "listener.name.ssl.ssl.keystore.location": str(pem["server"])})
    assert "SSL" in config.ssl_server_contexts()
    assert "listener.name.ssl.ssl.keystore.location" not in config.unknown_keys


def test_jks_and_pkcs12_stores_are_refused_naming_the_type_or_the_file(
        pem: dict[str, Path]) -> None:
    assert refused_key(**{"ssl.keystore.location": str(pem["server"]),
                          "ssl.keystore.type": "JKS"}) == "ssl.keystore.type"
    assert refused_key(**{"ssl.keystore.location": str(pem["junk"])}) == \
        "ssl.keystore.location"
    assert refused_key(**{"ssl.keystore.location": str(pem["server"]),
                          "ssl.truststore.location": str(pem["ca"]),
                          "ssl.truststore.type": "PKCS12"}) == "ssl.truststore.type"


def test_a_store_password_is_refused_with_pem(pem: dict[str, Path]) -> None:
    assert refused_key(**{"ssl.keystore.location": str(pem["server"]),
                          "ssl.keystore.password": "x"}) == "ssl.keystore.password"


def test_an_encrypted_key_needs_the_right_key_password(pem: dict[str, Path]) -> None:
    location = {"ssl.keystore.location": str(pem["encrypted"])}
    assert refused_key(**location) == "ssl.key.password"
    assert refused_key(**location, **{"ssl.key.password": "wrong"}) == "ssl.key.password"
    config = server_config(**location, **{"ssl.key.password": "s3cret"})
    assert "SSL" in config.ssl_server_contexts()


def test_bad_values_name_their_keys(pem: dict[str, Path]) -> None:
    keystore = {"ssl.keystore.location": str(pem["server"])}
    assert refused_key(**keystore, **{"ssl.client.auth": "maybe"}) == "ssl.client.auth"
    assert refused_key(**keystore, **{"ssl.enabled.protocols": "SSLv3"}) == \
        "ssl.enabled.protocols"
    assert refused_key(**keystore, **{"ssl.cipher.suites": "NOT_A_SUITE"}) == \
        "ssl.cipher.suites"
    assert refused_key(**keystore, **{"ssl.endpoint.identification.algorithm": "ldap"}) == \
        "ssl.endpoint.identification.algorithm"


def test_protocols_and_cipher_suites_shape_the_context(pem: dict[str, Path]) -> None:
    settings = TlsSettings.from_mapping({
        "ssl.keystore.location": str(pem["server"]), "ssl.enabled.protocols": "TLSv1.2",
        "ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"})
    context = build_context(settings, server_side=True)
    assert context.maximum_version == ssl.TLSVersion.TLSv1_2
    names = {c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"}
    assert names == {"ECDHE-RSA-AES128-GCM-SHA256"}
    # Only TLS 1.2 suites listed: TLS 1.3 cannot be negotiated.
    settings = TlsSettings.from_mapping({
        "ssl.keystore.location": str(pem["server"]),
        "ssl.cipher.suites": "ECDHE-RSA-AES256-GCM-SHA384"})
    assert build_context(settings, server_side=True).maximum_version == ssl.TLSVersion.TLSv1_2


def test_iana_cipher_names_map_to_openssl_names() -> None:
    assert openssl_cipher_name("TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384") == \
        "ECDHE-ECDSA-AES256-GCM-SHA384"
    assert openssl_cipher_name("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256") == \
        "ECDHE-RSA-CHACHA20-POLY1305"
    assert openssl_cipher_name("TLS_RSA_WITH_AES_128_CBC_SHA") == "AES128-SHA"
    assert openssl_cipher_name("ECDHE-RSA-AES128-SHA256") == "ECDHE-RSA-AES128-SHA256"


def test_security_inter_broker_protocol_picks_the_listener_named_after_it(
        pem: dict[str, Path]) -> None:
    props = dict(BASE)
    del props["inter.broker.listener.name"]
    props.update({"ssl.keystore.location": str(pem["server"]),
                  "security.inter.broker.protocol": "SSL"})
    assert ServerConfig(props).inter_broker_listener_name == "SSL"
    props["inter.broker.listener.name"] = "SSL"
    with pytest.raises(ConfigError) as failure:
        ServerConfig(props)
    assert failure.value.key == "inter.broker.listener.name"


def test_client_settings_take_security_protocol_and_ssl_keys(pem: dict[str, Path]) -> None:
    config = AdminConfig.from_mapping({"bootstrap.servers": "127.0.0.1:9092",
                                       "security.protocol": "ssl",
                                       "ssl.truststore.location": str(pem["ca"]),
                                       "ssl.endpoint.identification.algorithm": ""})
    assert config.security.protocol == "SSL"
    assert config.security.ssl_context is not None
    assert not config.security.ssl_context.check_hostname
    with pytest.raises(ClientConfigError, match="ssl.truststore.location"):
        AdminConfig.from_mapping({"bootstrap.servers": "127.0.0.1:9092",
                                  "security.protocol": "SSL",
                                  "ssl.truststore.location": "/nonexistent/ca.pem"})
    with pytest.raises(ClientConfigError, match="security.protocol"):
        AdminConfig.from_mapping({"bootstrap.servers": "127.0.0.1:9092",
                                  "security.protocol": "TLS"})


def test_inline_pem_truststore_is_read_and_inline_keystores_are_refused(
        pem: dict[str, Path]) -> None:
    ca_text = pem["ca"].read_text()
    settings = TlsSettings.from_mapping({"ssl.truststore.certificates": ca_text})
    context = build_context(settings, server_side=False)
    assert len(context.get_ca_certs()) == 1
    keystore = {"ssl.keystore.location": str(pem["server"])}
    assert refused_key(**keystore, **{"listener.name.ssl.ssl.keystore.key": "x"}) == \
        "listener.name.ssl.ssl.keystore.key"
    assert refused_key(**keystore, **{"ssl.truststore.certificates": "not pem"}) == \
        "ssl.truststore.certificates"
    assert refused_key(**keystore, **{"ssl.principal.mapping.rules": "RULE:^CN=(.*)$/$1/"}) \
        == "ssl.principal.mapping.rules"
