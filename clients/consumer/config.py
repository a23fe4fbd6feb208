"""The consumer's configuration: Kafka's names and defaults."""

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
from clients.consumer.group.assignors import assignor_names
from clients.net import PLAINTEXT, ClientSecurity, parse_bootstrap_servers
from clients.net.sasl import SaslCredentials
from clients.interceptors import parse_interceptors
from clients.serde import Deserializer, deserializer, is_identity


def parse_deserializer(value: Any) -> Deserializer | None:
    """None for the bytes default, so records skip the step."""
    return None if is_identity(value) else deserializer(value)



CONSUMER_KEYS: tuple[ClientConfigKey, ...] = COMMON_KEYS + (
    ClientConfigKey("group.id", parse_str, None),
    ClientConfigKey("auto.offset.reset", parse_str, "latest",
                    check=one_of("earliest", "latest", "none")),
    ClientConfigKey("fetch.min.bytes", parse_int, 1, check=at_least(0)),
    ClientConfigKey("fetch.max.wait.ms", parse_int, 500, check=at_least(0)),
    ClientConfigKey("fetch.max.bytes", parse_int, 52428800, check=at_least(0)),
    ClientConfigKey("max.partition.fetch.bytes", parse_int, 1048576, check=at_least(0)),
    ClientConfigKey("max.poll.records", parse_int, 500, check=at_least(1)),
    ClientConfigKey("check.crcs", parse_bool, True),
    ClientConfigKey("isolation.level", parse_str, "read_uncommitted",
                    check=one_of("read_uncommitted", "read_committed")),
    ClientConfigKey("group.instance.id", parse_str, None),
    ClientConfigKey("client.rack", parse_str, ""),
    ClientConfigKey("session.timeout.ms", parse_int, 45000, check=at_least(1)),
    ClientConfigKey("heartbeat.interval.ms", parse_int, 3000, check=at_least(1)),
    ClientConfigKey("max.poll.interval.ms", parse_int, 300000, check=at_least(1)),
    ClientConfigKey("enable.auto.commit", parse_bool, True),
    ClientConfigKey("auto.commit.interval.ms", parse_int, 5000, check=at_least(0)),
    ClientConfigKey("partition.assignment.strategy", lambda v: tuple(assignor_names(v)),
                    ("range",)),
    ClientConfigKey("default.api.timeout.ms", parse_int, 60000, check=at_least(0)),
    ClientConfigKey("key.deserializer", parse_deserializer, None),
    ClientConfigKey("value.deserializer", parse_deserializer, None),
    ClientConfigKey("interceptor.classes", parse_interceptors, ()),
    ClientConfigKey("group.protocol", lambda v: parse_str(v).lower(), "classic",
                    check=one_of("classic", "consumer")),
    ClientConfigKey("group.remote.assignor", parse_str, None),
)

# Settings the coordinator owns under the consumer protocol: setting them is an error there,
# as in Kafka's consumer.
CLASSIC_ONLY_KEYS = ("partition.assignment.strategy", "session.timeout.ms",
                     "heartbeat.interval.ms")


def check_group_protocol(values: Mapping[str, Any], given: set[str]) -> None:
    """ConfigError naming the key set for the other group protocol than ``group.protocol``."""
    if values["group.protocol"] == "consumer":
        for key in CLASSIC_ONLY_KEYS:
            if key in given:
                raise ConfigError(f"{key} cannot be set when group.protocol=consumer")
    elif "group.remote.assignor" in given:
        raise ConfigError("group.remote.assignor cannot be set when group.protocol=classic")


@dataclass(frozen=True)
class ConsumerConfig:
    """Validated consumer settings; build with ``ConsumerConfig.from_mapping``."""

    bootstrap_servers: list[tuple[str, int]]
    client_id: str
    group_id: str | None
    auto_offset_reset: str
    fetch_min_bytes: int
    fetch_max_wait_ms: int
    fetch_max_bytes: int
    max_partition_fetch_bytes: int
    max_poll_records: int
    check_crcs: bool
    isolation_level: int
    request_timeout_ms: int
    retry_backoff_ms: int
    connect_timeout_ms: int
    metadata_max_age_ms: int
    group_instance_id: str | None
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    enable_auto_commit: bool
    auto_commit_interval_ms: int
    partition_assignment_strategy: tuple[str, ...]
    default_api_timeout_ms: int
    key_deserializer: Deserializer | None = None
    value_deserializer: Deserializer | None = None
    interceptors: Sequence[Any] = ()
    group_protocol: str = "classic"
    group_remote_assignor: str | None = None
    security: ClientSecurity = PLAINTEXT
    sasl: SaslCredentials | None = None
    client_rack: str = ""

    @classmethod
    def from_mapping(cls, given: Mapping[str, Any] | None = None,
                     **overrides: Any) -> ConsumerConfig:
        values = resolve_config(CONSUMER_KEYS, given, overrides, "consumer")
        check_group_protocol(values, {
            name for name, value in (given or {}).items() if value is not None} | {
            name.replace("_", ".") for name, value in overrides.items() if value is not None})
        if values["request.timeout.ms"] <= values["fetch.max.wait.ms"]:
            raise ConfigError("request.timeout.ms should be greater than fetch.max.wait.ms")
        if values["heartbeat.interval.ms"] >= values["session.timeout.ms"]:
            raise ConfigError("heartbeat.interval.ms must be lower than session.timeout.ms")
        try:
            servers = parse_bootstrap_servers(values["bootstrap.servers"])
        except ValueError as exc:
            raise ConfigError(f"invalid bootstrap.servers: {exc}") from None
        return cls(
            bootstrap_servers=servers,
            sasl=sasl_credentials_of(values),
            client_id=values["client.id"],
            group_id=values["group.id"] or None,
            auto_offset_reset=values["auto.offset.reset"],
            fetch_min_bytes=values["fetch.min.bytes"],
            fetch_max_wait_ms=values["fetch.max.wait.ms"],
            fetch_max_bytes=values["fetch.max.bytes"],
            max_partition_fetch_bytes=values["max.partition.fetch.bytes"],
            max_poll_records=values["max.poll.records"],
            check_crcs=values["check.crcs"],
            isolation_level=1 if values["isolation.level"] == "read_committed" else 0,
            request_timeout_ms=values["request.timeout.ms"],
            retry_backoff_ms=values["retry.backoff.ms"],
            connect_timeout_ms=values["socket.connection.setup.timeout.ms"],
            metadata_max_age_ms=values["metadata.max.age.ms"],
            group_instance_id=values["group.instance.id"] or None,
            session_timeout_ms=values["session.timeout.ms"],
            heartbeat_interval_ms=values["heartbeat.interval.ms"],
            max_poll_interval_ms=values["max.poll.interval.ms"],
            enable_auto_commit=values["enable.auto.commit"],
            auto_commit_interval_ms=values["auto.commit.interval.ms"],
            partition_assignment_strategy=values["partition.assignment.strategy"],
            default_api_timeout_ms=values["default.api.timeout.ms"],
            key_deserializer=values["key.deserializer"],
            value_deserializer=values["value.deserializer"],
            interceptors=values["interceptor.classes"],
            group_protocol=values["group.protocol"],
            group_remote_assignor=values["group.remote.assignor"] or None,
            security=client_security(values),
            client_rack=values["client.rack"] or "",
        )
