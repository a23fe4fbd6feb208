"""The source's and sink's security options (kafka.security.protocol, kafka.sasl.*,
kafka.ssl.*): what reaches the connections, and each refusal naming its option."""

from __future__ import annotations

from pathlib import Path

import pytest
import trustme

from clients.spark.options import SparkOptionError, parse_source_options
from clients.spark.security import connection_security
from clients.spark.sink_options import parse_sink_options

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "a"}
PLAIN = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
         'username="alice" password="alice-secret";')
SCRAM = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
         'username="carol" password="c\\"s";')


def sasl(protocol: str = "SASL_PLAINTEXT", mechanism: str | None = "PLAIN",
         jaas: str | None = PLAIN, **more: str) -> dict[str, str]:
    options = {**BASE, "kafka.security.protocol": protocol, **more}
    if mechanism is not None:
        options["kafka.sasl.mechanism"] = mechanism
    if jaas is not None:
        options["kafka.sasl.jaas.config"] = jaas
    return options


def refusal(options: dict[str, str]) -> str:
    """The message of the refusal, from the source (batch and streaming) and the sink alike."""
    messages = set()
    for parse in (lambda o: parse_source_options(o, streaming=False),
                  lambda o: parse_source_options(o, streaming=True),
                  lambda o: parse_sink_options({**o, "topic": "t"})):
        with pytest.raises(SparkOptionError) as caught:
            parse(options)
        messages.add(str(caught.value))
    assert len(messages) == 1, messages
    return messages.pop()


def test_plain_and_scram_credentials_come_from_the_jaas_login_module() -> None:
    plain = connection_security(parse_source_options(sasl(), streaming=False).kafka)
    assert plain.transport.protocol == "SASL_PLAINTEXT" and not plain.transport.uses_tls
    assert plain.sasl is not None
    assert (plain.sasl.mechanism, plain.sasl.username, plain.sasl.password) == \
        ("PLAIN", "alice", "alice-secret")
    scram = connection_security(parse_sink_options(
        {**sasl(mechanism="SCRAM-SHA-512", jaas=SCRAM), "topic": "t"}).kafka)
    assert scram.sasl is not None
    assert (scram.sasl.mechanism, scram.sasl.username, scram.sasl.password) == \
        ("SCRAM-SHA-512", "carol", 'c"s')


def test_no_sasl_without_a_sasl_protocol() -> None:
    security = connection_security(parse_source_options(BASE, streaming=False).kafka)
    assert security.transport.protocol == "PLAINTEXT" and security.sasl is None
    # As in Kafka, SASL settings are unused (not refused) on a protocol without SASL.
    assert connection_security(parse_source_options(
        sasl(protocol="PLAINTEXT"), streaming=False).kafka).sasl is None


@pytest.mark.parametrize("options, fragment", [
    (sasl(protocol="SASL"), "option 'kafka.security.protocol' must be one of PLAINTEXT"),
    (sasl(mechanism=None), "option 'kafka.sasl.mechanism' must be one of PLAIN, "
                           "SCRAM-SHA-256, SCRAM-SHA-512 with kafka.security.protocol="
                           "SASL_PLAINTEXT, got GSSAPI (the default)"),
    (sasl(mechanism="OAUTHBEARER"), "option 'kafka.sasl.mechanism' must be one of"),
    (sasl(jaas=None), "option 'kafka.sasl.jaas.config' is required with "
                      "kafka.security.protocol=SASL_PLAINTEXT"),
    (sasl(jaas='org.apache.kafka.common.security.plain.PlainLoginModule required '
               'username="alice" password="x"'), "option 'kafka.sasl.jaas.config' is "
                                                 "invalid: must end with ';'"),
    (sasl(jaas='com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;'),
     "option 'kafka.sasl.jaas.config': login module com.sun.security.auth.module."
     "Krb5LoginModule is not supported"),
    (sasl(jaas='org.apache.kafka.common.security.plain.PlainLoginModule required '
               'username="alice";'), "option 'kafka.sasl.jaas.config' must set password"),
    (sasl(protocol="SASL_SSL", **{"kafka.ssl.truststore.type": "JKS"}),
     "option 'kafka.ssl.truststore.type' is invalid"),
    (sasl(protocol="SSL", **{"kafka.ssl.endpoint.identification.algorithm": "ldap"}),
     "option 'kafka.ssl.endpoint.identification.algorithm' is invalid: 'ldap' is not "
     "supported"),
    (sasl(protocol="SSL", **{"kafka.ssl.keystore.key": "-----BEGIN PRIVATE KEY-----"}),
     "option 'kafka.ssl.keystore.key' is invalid: is not supported"),
    (sasl(protocol="SSL", **{"kafka.ssl.keystore.type": "PKCS11"}),
     "option 'kafka.ssl.keystore.type' is invalid: 'PKCS11' is not one of JKS, PKCS12, PEM"),
])
def test_bad_security_options_are_refused_naming_the_option(options: dict[str, str],
                                                            fragment: str) -> None:
    assert fragment in refusal(options)


def test_passwords_stay_out_of_the_messages() -> None:
    message = refusal(sasl(jaas='org.apache.kafka.common.security.plain.PlainLoginModule '
                                'required password="hunter2" broken'))
    assert "hunter2" not in message


@pytest.fixture(scope="module")
def pem_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("pem")
    ca = trustme.CA()
    files = {"ca": directory / "ca.pem", "client": directory / "client.pem",
             "junk": directory / "store.jks"}
    ca.cert_pem.write_to_path(str(files["ca"]))
    ca.issue_cert("client.example").private_key_and_cert_chain_pem.write_to_path(
        str(files["client"]))
    files["junk"].write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02")  # a JKS magic number
    return files


def test_pem_truststore_and_keystore_build_the_tls_context(pem_files: dict[str, Path]
                                                           ) -> None:
    by_location = connection_security({
        "bootstrap.servers": "h:1", "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": PLAIN, "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pem_files["ca"]),
        "ssl.keystore.location": str(pem_files["client"])})
    assert by_location.transport.uses_tls and by_location.sasl is not None
    context = by_location.transport.ssl_context
    assert context is not None and context.check_hostname
    assert len(context.get_ca_certs()) == 1
    inline = connection_security({
        "bootstrap.servers": "h:1", "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": pem_files["ca"].read_text(),
        "ssl.endpoint.identification.algorithm": ""})
    assert inline.transport.ssl_context is not None
    assert not inline.transport.ssl_context.check_hostname
    assert len(inline.transport.ssl_context.get_ca_certs()) == 1


def test_unreadable_or_non_pem_stores_are_refused_naming_the_option(
        pem_files: dict[str, Path], tmp_path: Path) -> None:
    base = {"bootstrap.servers": "h:1", "security.protocol": "SSL"}
    cases = [
        ({"ssl.truststore.location": str(tmp_path / "missing.pem")},
         "option 'kafka.ssl.truststore.location' is invalid: cannot read"),
        ({"ssl.truststore.location": str(pem_files["junk"])},
         "option 'kafka.ssl.truststore.location' is invalid: "
         f"{pem_files['junk']} is not a PEM file (JKS and PKCS12 stores are not supported"),
        ({"ssl.keystore.location": str(pem_files["junk"]), "ssl.keystore.type": "PKCS12"},
         "option 'kafka.ssl.keystore.type' is invalid: PKCS12 stores are not supported"),
        ({"ssl.truststore.location": str(pem_files["ca"]),
          "ssl.truststore.password": "changeit"},
         "option 'kafka.ssl.truststore.password' is invalid: cannot be used with a PEM "
         "store"),
    ]
    for settings, fragment in cases:
        with pytest.raises(SparkOptionError) as caught:
            connection_security({**base, **settings})
        assert fragment in str(caught.value)
