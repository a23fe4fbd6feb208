"""`ServerConfig`: a node's validated static configuration with typed accessors."""

from __future__ import annotations

import logging
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from broker.config.bind_address import client_bind_address
from broker.config.definitions import SERVER_KEYS, ConfigKey, parse_value
from broker.config.endpoints import (
    SECURITY_PROTOCOLS,
    SUPPORTED_SECURITY_PROTOCOLS,
    TLS_SECURITY_PROTOCOLS,
    Listener,
    parse_listeners,
    parse_security_protocol_map,
    parse_voters,
)
from broker.config.errors import ConfigError
from broker.config.network_limits import NetworkLimits, is_listener_network_key, network_limits
from broker.config.metrics_listener import LISTENER_KEY, MetricsListener, parse_metrics_listener
from broker.config.log_defaults import log_default_keys, validate_log_defaults
from clients.common.properties import PropertiesSyntaxError, load_properties
from broker.config.sasl import (
    SaslClientCredentials,
    inter_broker_credentials,
    is_listener_sasl_key,
    listener_sasl,
)
from broker.sasl.session import ListenerSasl
from broker.config.tls import NodeTls, listener_override
from broker.config.uuids import parse_uuid
from clients.net.security import ClientSecurity
from clients.net.addresses import is_loopback
from metadata.topic_config_layers import ConfigSource

logger = logging.getLogger(__name__)

_SERVER_KEYS: dict[str, ConfigKey] = {key.name: key for key in SERVER_KEYS}


@dataclass(frozen=True)
class ConfigValue:
    """One key as DescribeConfigs reports it: parsed value, raw text, where it came from."""

    name: str
    value: object
    raw: str | None
    source: ConfigSource
    is_sensitive: bool


# SASL on a controller listener is not served yet: such a listener stops start-up, never
# served plaintext.
_NOT_SUPPORTED = ("; Raftka does not support SASL on the controller listener yet and will "
                  "not serve plaintext in its place")


def _definitions() -> dict[str, ConfigKey]:
    merged = {name: entry.key for name, entry in log_default_keys().items()}
    merged.update(_SERVER_KEYS)  # server definitions win where both name one key
    return merged


class ServerConfig:
    """Validated server configuration. Construction raises `ConfigError` naming the key."""

    def __init__(self, props: Mapping[str, str]) -> None:
        self._originals = dict(props)
        self._definitions = _definitions()
        self._values: dict[str, object] = {}
        self.unknown_keys = sorted(k for k in self._originals if k not in self._definitions
                                   and listener_override(k) is None
                                   and not is_listener_sasl_key(k)
                                   and not is_listener_network_key(k))
        for key in self.unknown_keys:
            logger.warning("unknown configuration %s ignored", key)
        for name, definition in self._definitions.items():
            raw = self._originals.get(name, definition.default)
            if definition.required and name not in self._originals:
                raise ConfigError(name, "is required")
            self._values[name] = parse_value(definition, raw)
        log_keys = log_default_keys()
        validate_log_defaults({k: v for k, v in self._originals.items() if k in log_keys})
        self._check_structure()

    @classmethod
    def from_file(cls, path: str | Path, overrides: Mapping[str, str] | None = None
                  ) -> "ServerConfig":
        """Load a `.properties` file; `overrides` win over the file's values."""
        try:
            props = load_properties(path)
        except OSError as exc:
            raise ConfigError("config file", f"cannot read {path}: {exc.strerror}") from None
        except PropertiesSyntaxError as exc:
            raise ConfigError("config file", f"{path}: {exc}") from None
        props.update(overrides or {})
        return cls(props)

    # -- generic access (DescribeConfigs) -------------------------------------------------

    def originals(self) -> dict[str, str]:
        """The key/value pairs exactly as configured (unknown keys included)."""
        return dict(self._originals)

    def get(self, key: str) -> object:
        """Parsed value of a known key (its default when unset); KeyError if unknown."""
        if key not in self._values:
            raise KeyError(key)
        return self._values[key]

    def describe(self, key: str) -> ConfigValue:
        """One known key with its source (static file vs default)."""
        definition = self._definitions[key]
        if key in self._originals:
            raw, source = self._originals[key], ConfigSource.STATIC_BROKER_CONFIG
        else:
            raw, source = definition.default, ConfigSource.DEFAULT_CONFIG
        return ConfigValue(key, self._values[key], raw, source, definition.is_sensitive)

    def describe_all(self) -> list[ConfigValue]:
        return [self.describe(key) for key in sorted(self._definitions)]

    def originals(self) -> dict[str, str]:
        """The raw key/value pairs as the file gave them."""
        return dict(self._originals)

    def log_defaults(self) -> dict[str, str]:
        """Broker-level topic config defaults set in this file, for
        `metadata.topic_configs.effective_topic_config(overrides, broker_defaults)`."""
        keys = log_default_keys()
        return {k: v for k, v in self._originals.items() if k in keys}

    # -- typed accessors --------------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self._values["node.id"]  # type: ignore[return-value]

    @property
    def process_roles(self) -> frozenset[str]:
        return frozenset(self._values["process.roles"])  # type: ignore[arg-type]

    @property
    def is_broker(self) -> bool:
        return "broker" in self.process_roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.process_roles

    @property
    def cluster_id(self) -> str | None:
        return self._values["cluster.id"]  # type: ignore[return-value]

    @property
    def listeners(self) -> list[Listener]:
        return list(self._listeners)

    @property
    def advertised_listeners(self) -> list[Listener]:
        """Broker listeners as clients should reach them (controller listeners excluded)."""
        return list(self._advertised)

    @property
    def controller_listener_names(self) -> list[str]:
        return list(self._controller_names)

    @property
    def inter_broker_listener_name(self) -> str:
        return self._inter_broker

    @property
    def inter_broker_security(self) -> ClientSecurity:
        """How this broker reaches other brokers' inter-broker listener (replica fetchers)."""
        return self._tls.client_security(self._inter_broker)

    @property
    def controller_security(self) -> ClientSecurity:
        """How this broker reaches the controllers' listener (the first controller name)."""
        if not self._controller_names:
            return ClientSecurity()
        return self._tls.client_security(self._controller_names[0])

    def ssl_server_contexts(self) -> dict[str, ssl.SSLContext]:
        """Listener name -> TLS server context, for each SSL (and SASL_SSL) listener."""
        return self._tls.server_contexts()

    @property
    def voters(self) -> dict[int, tuple[str, int]]:
        return dict(self._voters)

    @property
    def raft_port_offset(self) -> int:
        return self._values["raftka.raft.port.offset"]  # type: ignore[return-value]

    @property
    def client_bind_address(self) -> str | None:
        """Local address of the connections this node opens (None: the kernel chooses)."""
        return self._client_bind_address

    def raft_port_for(self, voter_id: int) -> int:
        """pysyncobj port of a voter: its controller.quorum.voters port + the offset."""
        return self._voters[voter_id][1] + self.raft_port_offset

    def raft_address_for(self, voter_id: int) -> tuple[str, int]:
        return self._voters[voter_id][0], self.raft_port_for(voter_id)

    @property
    def quorum_password(self) -> str | None:
        return self._values["controller.quorum.password"]  # type: ignore[return-value]

    @property
    def log_dirs(self) -> list[str]:
        dirs = self._values["log.dirs"]
        return list(dirs) if dirs else [self._values["log.dir"]]  # type: ignore[list-item,arg-type]

    @property
    def metadata_log_dir(self) -> str:
        return self._values["metadata.log.dir"] or self.log_dirs[0]  # type: ignore[return-value]

    @property
    def all_data_dirs(self) -> list[str]:
        """Every directory `raftka storage format` prepares: log dirs plus the metadata dir."""
        dirs = self.log_dirs
        return dirs if self.metadata_log_dir in dirs else dirs + [self.metadata_log_dir]

    def listener(self, name: str) -> Listener:
        for listener in self._listeners:
            if listener.name == name:
                return listener
        raise KeyError(name)

    # -- typed values of the keys the node reads (each parsed once, at construction) -----

    def _int(self, key: str) -> int:
        value = self._values[key]
        assert isinstance(value, int) and not isinstance(value, bool), key
        return value

    def _float(self, key: str) -> float:
        value = self._values[key]
        assert isinstance(value, (int, float)), key
        return float(value)

    def _bool(self, key: str) -> bool:
        value = self._values[key]
        assert isinstance(value, bool), key
        return value

    def _optional_str(self, key: str) -> str | None:
        value = self._values[key]
        return None if value is None else str(value)

    @property
    def log_retention_check_interval_ms(self) -> int:
        return self._int("log.retention.check.interval.ms")

    @property
    def log_cleaner_backoff_ms(self) -> int:
        return self._int("log.cleaner.backoff.ms")

    @property
    def log_cleaner_enable(self) -> bool:
        return self._bool("log.cleaner.enable")

    @property
    def log_cleaner_dedupe_buffer_size(self) -> int:
        return self._int("log.cleaner.dedupe.buffer.size")

    @property
    def log_cleaner_io_buffer_load_factor(self) -> float:
        return self._float("log.cleaner.io.buffer.load.factor")

    @property
    def log_flush_scheduler_interval_ms(self) -> int:
        return self._int("log.flush.scheduler.interval.ms")

    @property
    def log_flush_offset_checkpoint_interval_ms(self) -> int:
        return self._int("log.flush.offset.checkpoint.interval.ms")

    @property
    def offsets_topic_num_partitions(self) -> int:
        return self._int("offsets.topic.num.partitions")

    @property
    def offsets_topic_replication_factor(self) -> int:
        return self._int("offsets.topic.replication.factor")

    @property
    def offsets_topic_segment_bytes(self) -> int:
        return self._int("offsets.topic.segment.bytes")

    @property
    def offsets_commit_timeout_ms(self) -> int:
        return self._int("offsets.commit.timeout.ms")

    @property
    def offsets_retention_minutes(self) -> int:
        return self._int("offsets.retention.minutes")

    @property
    def offsets_retention_check_interval_ms(self) -> int:
        return self._int("offsets.retention.check.interval.ms")

    @property
    def offset_metadata_max_bytes(self) -> int:
        return self._int("offset.metadata.max.bytes")

    @property
    def group_initial_rebalance_delay_ms(self) -> int:
        return self._int("group.initial.rebalance.delay.ms")

    @property
    def group_min_session_timeout_ms(self) -> int:
        return self._int("group.min.session.timeout.ms")

    @property
    def group_max_session_timeout_ms(self) -> int:
        return self._int("group.max.session.timeout.ms")

    @property
    def group_max_size(self) -> int:
        return self._int("group.max.size")

    @property
    def transaction_state_log_replication_factor(self) -> int:
        return self._int("transaction.state.log.replication.factor")

    @property
    def transaction_state_log_num_partitions(self) -> int:
        return self._int("transaction.state.log.num.partitions")

    @property
    def transaction_state_log_min_isr(self) -> int:
        return self._int("transaction.state.log.min.isr")

    @property
    def transaction_state_log_segment_bytes(self) -> int:
        return self._int("transaction.state.log.segment.bytes")

    @property
    def transaction_max_timeout_ms(self) -> int:
        return self._int("transaction.max.timeout.ms")

    @property
    def transaction_abort_timed_out_transaction_cleanup_interval_ms(self) -> int:
        return self._int("transaction.abort.timed.out.transaction.cleanup.interval.ms")

    @property
    def transaction_remove_expired_transaction_cleanup_interval_ms(self) -> int:
        return self._int("transaction.remove.expired.transaction.cleanup.interval.ms")

    @property
    def transaction_partition_verification_enable(self) -> bool:
        return self._bool("transaction.partition.verification.enable")

    @property
    def transactional_id_expiration_ms(self) -> int:
        return self._int("transactional.id.expiration.ms")

    @property
    def socket_request_max_bytes(self) -> int:
        return self._int("socket.request.max.bytes")

    @property
    def socket_send_buffer_bytes(self) -> int:
        return self._int("socket.send.buffer.bytes")

    @property
    def socket_receive_buffer_bytes(self) -> int:
        return self._int("socket.receive.buffer.bytes")

    @property
    def connections_max_idle_ms(self) -> int:
        return self._int("connections.max.idle.ms")

    @property
    def max_connections(self) -> int:
        return self._int("max.connections")

    @property
    def num_partitions(self) -> int:
        return self._int("num.partitions")

    @property
    def default_replication_factor(self) -> int:
        return self._int("default.replication.factor")

    @property
    def auto_create_topics_enable(self) -> bool:
        return self._bool("auto.create.topics.enable")

    @property
    def delete_topic_enable(self) -> bool:
        return self._bool("delete.topic.enable")

    @property
    def unclean_leader_election_enable(self) -> bool:
        return self._bool("unclean.leader.election.enable")

    @property
    def auto_leader_rebalance_enable(self) -> bool:
        return self._bool("auto.leader.rebalance.enable")

    @property
    def leader_imbalance_check_interval_seconds(self) -> int:
        return self._int("leader.imbalance.check.interval.seconds")

    @property
    def leader_imbalance_per_broker_percentage(self) -> int:
        return self._int("leader.imbalance.per.broker.percentage")

    @property
    def broker_heartbeat_interval_ms(self) -> int:
        return self._int("broker.heartbeat.interval.ms")

    @property
    def broker_session_timeout_ms(self) -> int:
        return self._int("broker.session.timeout.ms")

    @property
    def broker_rack(self) -> str | None:
        return self._optional_str("broker.rack")

    @property
    def replica_selector_class(self) -> str | None:
        return self._optional_str("replica.selector.class")

    @property
    def initial_broker_registration_timeout_ms(self) -> int:
        return self._int("initial.broker.registration.timeout.ms")

    @property
    def metadata_log_max_snapshot_interval(self) -> int:
        return self._int("metadata.log.max.snapshot.interval")

    @property
    def metadata_log_max_record_bytes_between_snapshots(self) -> int:
        return self._int("metadata.log.max.record.bytes.between.snapshots")

    @property
    def metadata_log_max_snapshot_interval_ms(self) -> int:
        return self._int("metadata.log.max.snapshot.interval.ms")

    @property
    def controller_quorum_election_timeout_ms(self) -> int:
        return self._int("controller.quorum.election.timeout.ms")

    @property
    def controller_quorum_fetch_timeout_ms(self) -> int:
        return self._int("controller.quorum.fetch.timeout.ms")

    @property
    def controller_quorum_request_timeout_ms(self) -> int:
        return self._int("controller.quorum.request.timeout.ms")

    @property
    def replica_lag_time_max_ms(self) -> int:
        return self._int("replica.lag.time.max.ms")

    @property
    def replica_socket_receive_buffer_bytes(self) -> int:
        return self._int("replica.socket.receive.buffer.bytes")

    @property
    def replica_fetch_max_bytes(self) -> int:
        return self._int("replica.fetch.max.bytes")

    @property
    def replica_fetch_response_max_bytes(self) -> int:
        return self._int("replica.fetch.response.max.bytes")

    @property
    def replica_fetch_wait_max_ms(self) -> int:
        return self._int("replica.fetch.wait.max.ms")

    @property
    def replica_fetch_min_bytes(self) -> int:
        return self._int("replica.fetch.min.bytes")

    @property
    def replica_fetch_backoff_ms(self) -> int:
        return self._int("replica.fetch.backoff.ms")

    @property
    def metrics_listener(self) -> MetricsListener | None:
        """Where /metrics is served (None: nowhere); see `broker.config.metrics_listener`."""
        return parse_metrics_listener(self._originals.get(LISTENER_KEY), self.node_id)

    # -- cross-key validation --------------------------------------------------------------

    def _check_structure(self) -> None:
        self.metrics_listener  # a bad value stops start-up naming the key
        if self._int("group.consumer.heartbeat.interval.ms") >= self._int(
                "group.consumer.session.timeout.ms"):
            raise ConfigError("group.consumer.heartbeat.interval.ms",
                              "must be less than group.consumer.session.timeout.ms")
        if not self.process_roles:
            raise ConfigError("process.roles", "must name broker, controller or both")
        cluster_id = self.cluster_id
        if cluster_id is not None:
            try:
                parse_uuid(cluster_id)
            except ValueError as exc:
                raise ConfigError("cluster.id", str(exc)) from None
        explicit_map = "listener.security.protocol.map" in self._originals
        self._protocol_map = parse_security_protocol_map(
            self._values["listener.security.protocol.map"],  # type: ignore[arg-type]
            "listener.security.protocol.map")
        self._controller_names = [n.upper() for n in self._values["controller.listener.names"]]  # type: ignore[union-attr]
        if self.is_controller and not self._controller_names:
            raise ConfigError("controller.listener.names",
                              "is required when process.roles includes controller")
        if not explicit_map:
            # Kafka maps controller listeners to PLAINTEXT when the map is left at its default.
            for name in self._controller_names:
                self._protocol_map.setdefault(name, "PLAINTEXT")
        self._listeners = parse_listeners(
            self._values["listeners"], "listeners", self._protocol_map,  # type: ignore[arg-type]
            "listener.security.protocol.map")
        if not self._listeners:
            raise ConfigError("listeners", "no listener configured")
        self._voters = parse_voters(",".join(self._values["controller.quorum.voters"]),  # type: ignore[arg-type]
                                    "controller.quorum.voters")
        if not self._voters:
            raise ConfigError("controller.quorum.voters", "is required (id@host:port,...)")
        self._check_roles()
        self._check_security_protocols()
        self._check_tls()
        self._check_raft_ports()
        self._advertised = self._resolve_advertised()
        self._client_bind_address = client_bind_address(
            self._values["raftka.client.bind.address"], self._listeners)  # type: ignore[arg-type]
        self._check_sasl()
        self.network_limits: NetworkLimits = network_limits(
            self.get, self._originals, [listener.name for listener in self._listeners])

    def _check_roles(self) -> None:
        names = [listener.name for listener in self._listeners]
        controller_names = set(self._controller_names)
        if self.is_controller:
            if not self._controller_names:
                raise ConfigError("controller.listener.names",
                                  "is required when process.roles includes controller")
            if self._controller_names[0] not in names:
                raise ConfigError("controller.listener.names",
                                  f"{self._controller_names[0]} is not among listeners")
            if self.node_id not in self._voters:
                raise ConfigError("controller.quorum.voters",
                                  f"node.id {self.node_id} is a controller but not a voter")
        elif self.node_id in self._voters:
            raise ConfigError("controller.quorum.voters",
                              f"node.id {self.node_id} is a voter but process.roles lacks controller")
        if not self.is_broker:
            extra = [n for n in names if n not in controller_names]
            if extra:
                raise ConfigError("listeners", f"a controller-only node may list only "
                                  f"controller listeners, not {', '.join(extra)}")
            self._inter_broker = ""
            return
        if not self.is_controller:
            clash = [n for n in names if n in controller_names]
            if clash:
                raise ConfigError("listeners", f"a broker-only node must not list controller "
                                  f"listener {', '.join(clash)}")
        broker_names = [n for n in names if n not in controller_names]
        if not broker_names:
            raise ConfigError("listeners", "a broker needs a listener besides the controller's")
        inter = self._values["inter.broker.listener.name"]
        if inter and "security.inter.broker.protocol" in self._originals:
            raise ConfigError("inter.broker.listener.name", "set either it or "
                              "security.inter.broker.protocol, not both")
        # As in Kafka, without a name the inter-broker listener is the one named after
        # security.inter.broker.protocol.
        protocol = str(self._values["security.inter.broker.protocol"]).upper()
        self._inter_broker = str(inter).upper() if inter else protocol
        if self._inter_broker not in broker_names:
            key = "inter.broker.listener.name" if inter else "security.inter.broker.protocol"
            raise ConfigError(key, f"{self._inter_broker} is not a broker listener in "
                              f"listeners")

    def _check_security_protocols(self) -> None:
        """Refuse every listener Raftka would otherwise serve (or reach controllers on) in
        plaintext although its security protocol asks for TLS or SASL."""
        inter = str(self._values["security.inter.broker.protocol"]).upper()
        if inter not in SECURITY_PROTOCOLS:
            raise ConfigError("security.inter.broker.protocol",
                              f"{inter!r} is not one of {', '.join(SECURITY_PROTOCOLS)}")
        if self.is_broker and inter not in SUPPORTED_SECURITY_PROTOCOLS:
            raise ConfigError("security.inter.broker.protocol",
                              f"is {inter}{_NOT_SUPPORTED}")
        listed = {listener.name: listener for listener in self._listeners}

        def refuse(key: str, role: str, name: str) -> None:
            protocol = self._protocol_map.get(name, "PLAINTEXT")
            # SASL on the controller listener is not served yet.
            controller = name in self._controller_names
            if protocol in SUPPORTED_SECURITY_PROTOCOLS and not (
                    controller and protocol.startswith("SASL_")):
                return
            where = listed[name].uri() if name in listed else name
            source = "" if name == protocol else " (listener.security.protocol.map)"
            raise ConfigError(key, f"{role} {where} uses security protocol "
                                   f"{protocol}{source}{_NOT_SUPPORTED}")

        # Controllers first: a broker-only node does not list them but connects to them.
        for name in self._controller_names:
            refuse("controller.listener.names", "controller listener", name)
        if self._inter_broker:
            refuse("inter.broker.listener.name", "inter-broker listener", self._inter_broker)
        for name in listed:
            refuse("listeners", "listener", name)

    def _check_sasl(self) -> None:
        self.sasl_listeners: dict[str, ListenerSasl] = listener_sasl(
            self._originals, self._listeners, self._int("connections.max.reauth.ms"))
        self.inter_broker_sasl: SaslClientCredentials | None = None
        if self._inter_broker and self._inter_broker in {l.name for l in self._listeners}:
            self.inter_broker_sasl = inter_broker_credentials(
                self._originals, self.listener(self._inter_broker), self.sasl_listeners)
    def _check_tls(self) -> None:
        """Build every TLS context this node needs now: a missing or bad file stops start-up
        naming its key."""
        tls_listeners = [listener.name for listener in self._listeners
                         if listener.security_protocol in TLS_SECURITY_PROTOCOLS]
        client_listeners: list[str] = []
        if self.is_broker:
            client_listeners.append(self._inter_broker)
            if self._controller_names:
                client_listeners.append(self._controller_names[0])
        self._tls = NodeTls(self._originals, self._protocol_map, tls_listeners,
                            client_listeners)

    def _check_raft_ports(self) -> None:
        offset = self.raft_port_offset
        for voter_id, (host, port) in self._voters.items():
            if port + offset > 65535:
                raise ConfigError("raftka.raft.port.offset",
                                  f"voter {voter_id}'s Raft port {port + offset} exceeds 65535")
            if not is_loopback(host) and not self.quorum_password:
                raise ConfigError("controller.quorum.password",
                                  f"is required: voter {voter_id} listens on {host}, "
                                  f"beyond loopback")

    def _resolve_advertised(self) -> list[Listener]:
        controller_names = set(self._controller_names)
        raw = self._values["advertised.listeners"]
        if raw:
            advertised = parse_listeners(raw, "advertised.listeners", self._protocol_map,  # type: ignore[arg-type]
                                         "listener.security.protocol.map")
            bound = {listener.name for listener in self._listeners}
            for listener in advertised:
                if listener.name not in bound:
                    raise ConfigError("advertised.listeners",
                                      f"{listener.name} is not among listeners")
            key = "advertised.listeners"
        else:
            advertised = [l for l in self._listeners if l.name not in controller_names]
            key = "listeners"
        result = []
        for listener in advertised:
            if listener.name in controller_names:
                continue
            host = listener.host or socket.getfqdn()
            if host in ("0.0.0.0", "::"):
                raise ConfigError("advertised.listeners", f"{listener.name} would advertise "
                                  f"the non-routable address {host} (from {key}); set "
                                  f"advertised.listeners")
            result.append(Listener(listener.name, host, listener.port,
                                   listener.security_protocol))
        return result
