"""The producer's configuration: Kafka's names and (Kafka 4.0) defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from clients.common.settings import (
    COMMON_KEYS,
    ConfigError,
    ClientConfigKey,
    at_least,
    client_security,
    one_of,
    parse_bool,
    parse_int,
    parse_str,
    resolve_config,
    sasl_credentials_of,
)
from clients.interceptors import parse_interceptors
from clients.net import PLAINTEXT, ClientSecurity, parse_bootstrap_servers
from clients.net.sasl import SaslCredentials
from clients.serde import Serializer, is_identity, serializer
from clients.records.compression import CODEC_IDS, is_available


def parse_serializer(value: Any) -> Serializer | None:
    """None for the bytes default (the record path then skips the step)."""
    return None if is_identity(value) else serializer(value)


def _parse_acks(value: Any) -> int:
    text = str(value).strip().lower()
    if text == "all":
        return -1
    if text not in ("-1", "0", "1"):
        raise ValueError("must be all, -1, 0 or 1")
    return int(text)


PRODUCER_KEYS: tuple[ClientConfigKey, ...] = COMMON_KEYS + (
    ClientConfigKey("acks", _parse_acks, -1),
    ClientConfigKey("linger.ms", parse_int, 5, check=at_least(0)),
    ClientConfigKey("batch.size", parse_int, 16384, check=at_least(0)),
    ClientConfigKey("compression.type", parse_str, "none", check=one_of(*CODEC_IDS)),
    ClientConfigKey("delivery.timeout.ms", parse_int, 120000, check=at_least(0)),
    ClientConfigKey("retries", parse_int, 2147483647, check=at_least(0)),
    ClientConfigKey("max.in.flight.requests.per.connection", parse_int, 5, check=at_least(1)),
    ClientConfigKey("max.request.size", parse_int, 1048576, check=at_least(0)),
    ClientConfigKey("max.block.ms", parse_int, 60000, check=at_least(0)),
    # None: not given. Then idempotence is on unless another setting conflicts with it.
    ClientConfigKey("enable.idempotence", parse_bool, None),
    ClientConfigKey("transactional.id", parse_str, None),
    ClientConfigKey("transaction.timeout.ms", parse_int, 60000, check=at_least(1)),
    ClientConfigKey("buffer.memory", parse_int, 33554432, check=at_least(0)),
    ClientConfigKey("retry.backoff.max.ms", parse_int, 1000, check=at_least(0)),
    ClientConfigKey("partitioner.adaptive.partitioning.enable", parse_bool, True),
    ClientConfigKey("partitioner.availability.timeout.ms", parse_int, 0, check=at_least(0)),
    ClientConfigKey("partitioner.ignore.keys", parse_bool, False),
    ClientConfigKey("key.serializer", parse_serializer, None),
    ClientConfigKey("value.serializer", parse_serializer, None),
    ClientConfigKey("interceptor.classes", parse_interceptors, ()),
)


@dataclass(frozen=True)
class ProducerConfig:
    """Validated producer settings; build with ``ProducerConfig.from_mapping``."""

    bootstrap_servers: list[tuple[str, int]]
    client_id: str
    acks: int
    linger_ms: int
    batch_size: int
    compression: int
    request_timeout_ms: int
    delivery_timeout_ms: int
    retries: int
    retry_backoff_ms: int
    max_in_flight: int
    max_request_size: int
    max_block_ms: int
    metadata_max_age_ms: int
    connect_timeout_ms: int
    buffer_memory: int = 33554432
    retry_backoff_max_ms: int = 1000
    adaptive_partitioning: bool = True
    availability_timeout_ms: int = 0
    ignore_keys: bool = False
    key_serializer: Serializer | None = None
    value_serializer: Serializer | None = None
    interceptors: Sequence[Any] = ()
    enable_idempotence: bool = False
    idempotence_explicit: bool = False
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60000
    security: ClientSecurity = PLAINTEXT
    sasl: SaslCredentials | None = None

    @classmethod
    def from_mapping(cls, given: Mapping[str, Any] | None = None,
                     **overrides: Any) -> ProducerConfig:
        """Parse Kafka-named settings. ConfigError names the key of any bad value."""
        values = resolve_config(PRODUCER_KEYS, given, overrides, "producer")
        idempotent = idempotence_setting(values)
        codec = CODEC_IDS[values["compression.type"]]
        if not is_available(codec):
            raise ConfigError(f"compression.type={values['compression.type']} needs a "
                              "package that is not installed")
        if values["delivery.timeout.ms"] < values["linger.ms"] + values["request.timeout.ms"]:
            raise ConfigError("delivery.timeout.ms should be equal to or larger than "
                              "linger.ms + request.timeout.ms")
        try:
            servers = parse_bootstrap_servers(values["bootstrap.servers"])
        except ValueError as exc:
            raise ConfigError(f"invalid bootstrap.servers: {exc}") from None
        return cls(
            bootstrap_servers=servers,
            sasl=sasl_credentials_of(values),
            client_id=values["client.id"],
            acks=values["acks"],
            linger_ms=values["linger.ms"],
            batch_size=values["batch.size"],
            compression=codec,
            request_timeout_ms=values["request.timeout.ms"],
            delivery_timeout_ms=values["delivery.timeout.ms"],
            retries=values["retries"],
            retry_backoff_ms=values["retry.backoff.ms"],
            max_in_flight=values["max.in.flight.requests.per.connection"],
            max_request_size=values["max.request.size"],
            max_block_ms=values["max.block.ms"],
            metadata_max_age_ms=values["metadata.max.age.ms"],
            connect_timeout_ms=values["socket.connection.setup.timeout.ms"],
            buffer_memory=values["buffer.memory"],
            retry_backoff_max_ms=max(values["retry.backoff.max.ms"], values["retry.backoff.ms"]),
            adaptive_partitioning=values["partitioner.adaptive.partitioning.enable"],
            availability_timeout_ms=values["partitioner.availability.timeout.ms"],
            ignore_keys=values["partitioner.ignore.keys"],
            key_serializer=values["key.serializer"],
            value_serializer=values["value.serializer"],
            interceptors=values["interceptor.classes"],
            enable_idempotence=idempotent,
            idempotence_explicit=values["enable.idempotence"] is not None
            or values["transactional.id"] is not None,
            transactional_id=values["transactional.id"],
            transaction_timeout_ms=values["transaction.timeout.ms"],
            security=client_security(values),
        )


# Kafka's limit: the broker keeps the last five batches per producer for duplicate checks.
MAX_IN_FLIGHT_FOR_IDEMPOTENCE = 5


def idempotence_setting(values: Mapping[str, Any]) -> bool:
    """Whether the producer is idempotent, as Kafka's producer decides it (since 3.0):
    on by default; a conflicting acks, retries or max.in.flight turns the default off but
    is a ConfigError when enable.idempotence=true was asked for; transactional.id needs it."""
    explicit = values["enable.idempotence"]
    conflicts = []
    if values["acks"] != -1:
        conflicts.append(f"acks must be all (got {values['acks']})")
    if values["retries"] == 0:
        conflicts.append("retries must be greater than 0")
    if values["max.in.flight.requests.per.connection"] > MAX_IN_FLIGHT_FOR_IDEMPOTENCE:
        conflicts.append("max.in.flight.requests.per.connection must be at most "
                         f"{MAX_IN_FLIGHT_FOR_IDEMPOTENCE}")
    transactional_id = values["transactional.id"]
    if transactional_id == "":
        raise ConfigError("invalid value '' for configuration 'transactional.id': "
                          "must not be empty")
    if transactional_id is not None and explicit is False:
        raise ConfigError("cannot set a transactional.id without also enabling idempotence "
                          "(enable.idempotence=false was given)")
    if conflicts and (explicit or transactional_id is not None):
        wanted = "transactional.id" if explicit is None else "enable.idempotence=true"
        raise ConfigError(f"{wanted} needs an idempotent producer: {'; '.join(conflicts)}")
    if explicit is None:
        return not conflicts
    return explicit
