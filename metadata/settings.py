"""Static controller settings the decisions depend on (Kafka's names and defaults)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from metadata.topic_configs import parse_topic_config


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    """Broker/controller configuration values used by the controller's decisions.

    `validate_broker_config(name, value)` may raise ValueError to reject a dynamic broker
    config; without it broker configs are only checked for a non-empty name and value.
    `validate_topic_config(name, value)` may raise ValueError to reject a topic config value
    that parses but the nodes cannot honour (a compression.type whose codec is not
    installed).
    """

    cluster_id: str | None = None
    # This controller's node id: its own dynamic broker configs take part in its decisions
    # (unclean leader election), as in Kafka; None leaves them out.
    node_id: int | None = None
    num_partitions: int = 1  # num.partitions
    default_replication_factor: int = 1  # default.replication.factor
    unclean_leader_election_enable: bool = False  # unclean.leader.election.enable
    broker_session_timeout_ms: int = 9000  # broker.session.timeout.ms
    delete_topic_enable: bool = True  # delete.topic.enable
    auto_leader_rebalance_enable: bool = True  # auto.leader.rebalance.enable
    leader_imbalance_check_interval_seconds: int = 300  # leader.imbalance.check.interval.seconds
    leader_imbalance_per_broker_percentage: int = 10  # leader.imbalance.per.broker.percentage
    producer_id_block_size: int = 1000
    validate_broker_config: Callable[[str, str], None] | None = None
    validate_topic_config: Callable[[str, str], None] | None = None

    def check_topic_config(self, name: str, value: str) -> None:
        """Parse and validate one topic config; ValueError (ConfigValidationError for the
        config's own rules) names the key."""
        parse_topic_config(name, value)
        if self.validate_topic_config is not None:
            self.validate_topic_config(name, value)
