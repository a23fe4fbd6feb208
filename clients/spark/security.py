"""How the source and the sink authenticate and encrypt: Spark's Kafka options
``kafka.security.protocol``, ``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config`` and
``kafka.ssl.*``, read by the clients' own parsers (``clients.net``), with every refusal
naming the Spark option at fault.

``kafka_settings`` below are the ``kafka.*`` options without their prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from clients.net.jaas import JaasConfigError, parse_jaas
from clients.net.sasl import MECHANISMS, SASL_PROTOCOLS, SaslCredentials, sasl_credentials
from clients.net.security import CLIENT_SECURITY_PROTOCOLS, TLS_PROTOCOLS, ClientSecurity
from clients.net.tls import TlsConfigError, TlsSettings
from clients.spark.errors import SparkOptionError

# The login modules whose username and password SASL/PLAIN and SCRAM take, as in Kafka's
# clients (either module serves any of the mechanisms: both only hold the credentials).
LOGIN_MODULES = ("org.apache.kafka.common.security.plain.PlainLoginModule",
                 "org.apache.kafka.common.security.scram.ScramLoginModule")


@dataclass(frozen=True)
class ConnectionSecurity:
    """What every connection of a query uses: its transport (TLS or not, with the TLS
    context) and its SASL credentials (None without SASL)."""

    transport: ClientSecurity
    sasl: SaslCredentials | None


def _protocol(kafka_settings: Mapping[str, str]) -> str:
    raw = kafka_settings.get("security.protocol")
    protocol = (raw or "PLAINTEXT").strip().upper()
    if protocol not in CLIENT_SECURITY_PROTOCOLS:
        raise SparkOptionError(f"option 'kafka.security.protocol' must be one of "
                               f"{', '.join(CLIENT_SECURITY_PROTOCOLS)}, got {raw!r}")
    return protocol


def _tls_error(exc: TlsConfigError) -> SparkOptionError:
    return SparkOptionError(f"option 'kafka.{exc.key}' is invalid: {exc.reason}")


def sasl_of(kafka_settings: Mapping[str, str]) -> SaslCredentials | None:
    """The SASL credentials of a SASL_* protocol (None otherwise): ``kafka.sasl.mechanism``
    PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, the user and password from the PLAIN or SCRAM
    login module of ``kafka.sasl.jaas.config``."""
    protocol = _protocol(kafka_settings)
    if protocol not in SASL_PROTOCOLS:
        return None
    raw_mechanism = kafka_settings.get("sasl.mechanism")
    mechanism = (raw_mechanism or "GSSAPI").strip().upper()
    if mechanism not in MECHANISMS:
        given = "GSSAPI (the default)" if raw_mechanism is None else repr(raw_mechanism)
        raise SparkOptionError(f"option 'kafka.sasl.mechanism' must be one of "
                               f"{', '.join(MECHANISMS)} with kafka.security.protocol="
                               f"{protocol}, got {given}")
    jaas = kafka_settings.get("sasl.jaas.config")
    if jaas is not None:
        _check_jaas(jaas)
    elif kafka_settings.get("sasl.username") is None:
        raise SparkOptionError(f"option 'kafka.sasl.jaas.config' is required with "
                               f"kafka.security.protocol={protocol}, e.g. '{LOGIN_MODULES[0]} "
                               f'required username="..." password="...";\'')
    try:
        return sasl_credentials({**kafka_settings, "sasl.mechanism": mechanism})
    except ValueError as exc:
        raise SparkOptionError(f"invalid SASL option: kafka.{exc}") from None


def _check_jaas(text: str) -> None:
    try:
        entry = parse_jaas(text)
    except JaasConfigError as exc:
        raise SparkOptionError(f"option 'kafka.sasl.jaas.config' is invalid: {exc}") from None
    if entry.module not in LOGIN_MODULES:
        raise SparkOptionError(f"option 'kafka.sasl.jaas.config': login module "
                               f"{entry.module} is not supported; use "
                               f"{' or '.join(LOGIN_MODULES)}")
    for name in ("username", "password"):
        if name not in entry.options:
            raise SparkOptionError(f"option 'kafka.sasl.jaas.config' must set "
                                   f'{name}="..."')


def check_security_options(kafka_settings: Mapping[str, str]) -> None:
    """Refuse a bad or unsupported security option, reading no file (pure): the protocol,
    the SASL settings and the values of the ``kafka.ssl.*`` options."""
    protocol = _protocol(kafka_settings)
    if protocol in TLS_PROTOCOLS:
        try:
            settings = TlsSettings.from_mapping(kafka_settings)
        except TlsConfigError as exc:
            raise _tls_error(exc) from None
        for key, store_type in (("ssl.keystore.type", settings.keystore_type),
                                ("ssl.truststore.type", settings.truststore_type)):
            if store_type not in (None, "PEM"):
                raise SparkOptionError(
                    f"option 'kafka.{key}' is invalid: {store_type} stores are not "
                    f"supported; convert the store to PEM and set kafka.{key}=PEM")
    sasl_of(kafka_settings)


def connection_security(kafka_settings: Mapping[str, str]) -> ConnectionSecurity:
    """The security of a query's connections; reads the TLS files now, so a missing file,
    a JKS or PKCS12 store or a bad key fails here, naming its option."""
    check_security_options(kafka_settings)
    try:
        transport = ClientSecurity.from_config(kafka_settings)
    except TlsConfigError as exc:
        raise _tls_error(exc) from None
    return ConnectionSecurity(transport, sasl_of(kafka_settings))
