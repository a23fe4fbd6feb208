"""ControllerSettings from the server configuration, and the dynamic broker-config validator."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from broker.config.compression_type import codec_problem
from broker.config.definitions import SERVER_KEYS, ConfigKey, parse_value
from broker.config.dynamic import dynamic_broker_keys
from broker.config.log_defaults import log_default_keys, validate_log_defaults
from metadata.controller.configs import InvalidReconfiguration, NotDynamicConfig
from metadata.settings import ControllerSettings

if TYPE_CHECKING:
    from broker.config import ServerConfig

# Keys that fix a node's identity, storage or quorum membership: Kafka only takes these from
# the static file, so IncrementalAlterConfigs on a broker resource refuses them.
STATIC_ONLY_KEYS = frozenset({
    "process.roles",
    "node.id",
    "cluster.id",
    "broker.rack",
    "controller.quorum.voters",
    "controller.quorum.bootstrap.servers",
    "controller.listener.names",
    "controller.quorum.password",
    "raftka.raft.port.offset",
    "listeners",
    "advertised.listeners",
    "listener.security.protocol.map",
    "inter.broker.listener.name",
    "log.dirs",
    "log.dir",
    "metadata.log.dir",
})


def controller_settings_from_config(config: "ServerConfig", *,
                                    cluster_id: str | None = None) -> ControllerSettings:
    """The controller's settings from Kafka's keys; `cluster_id` defaults to `cluster.id`."""
    return ControllerSettings(
        cluster_id=cluster_id if cluster_id is not None else config.cluster_id,
        node_id=config.node_id,
        num_partitions=config.num_partitions,
        default_replication_factor=config.default_replication_factor,
        unclean_leader_election_enable=config.unclean_leader_election_enable,
        broker_session_timeout_ms=config.broker_session_timeout_ms,
        delete_topic_enable=config.delete_topic_enable,
        auto_leader_rebalance_enable=config.auto_leader_rebalance_enable,
        leader_imbalance_check_interval_seconds=config.leader_imbalance_check_interval_seconds,
        leader_imbalance_per_broker_percentage=config.leader_imbalance_per_broker_percentage,
        validate_broker_config=broker_config_validator(),
        validate_topic_config=check_codec_available,
    )


def check_codec_available(name: str, value: str) -> None:
    """Refuse a compression.type (topic or broker) whose codec this node cannot write: the
    leader recompresses produced batches into it, and storing the producer's codec instead
    would silently ignore the config."""
    if name == "compression.type":
        problem = codec_problem(value.strip())
        if problem is not None:
            raise ValueError(problem)


def broker_config_validator() -> Callable[[str, str], None]:
    """A `ControllerSettings.validate_broker_config`: the name must be a known server key
    Kafka lets change at runtime (`broker.config.dynamic`) and the value must parse as that
    key's type and range.

    Raises ValueError (ConfigError) with Kafka-style messages; the decision maps it to
    INVALID_CONFIG.
    """
    definitions: dict[str, ConfigKey] = {name: entry.key for name, entry in log_default_keys().items()}
    definitions.update((key.name, key) for key in SERVER_KEYS)
    dynamic = dynamic_broker_keys()
    log_keys = frozenset(log_default_keys())

    def validate(name: str, value: str) -> None:
        definition = definitions.get(name)
        if definition is None:
            raise ValueError(f"Unknown broker config name: {name}")
        if name in STATIC_ONLY_KEYS or name not in dynamic:
            raise NotDynamicConfig(f"Cannot update these configs dynamically: {name}")
        parsed = parse_value(definition, value)
        if name == "log.cleaner.threads" and parsed < 1:  # type: ignore[operator]
            # Kafka's LogCleaner.validateReconfiguration (a static 0 runs no cleaner).
            raise InvalidReconfiguration("Log cleaner threads should be at least 1")
        if name in log_keys:
            # The topic config's own rules (and an installed codec for compression.type),
            # as a topic inheriting the value would need them.
            validate_log_defaults({name: value})

    return validate
