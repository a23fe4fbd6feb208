"""`__transaction_state`: the settings it is created with, and which partition (so which
coordinator) owns a transactional id."""

from __future__ import annotations

from typing import Any

from broker.coordinator.routing import partition_for_key
from broker.coordinator.topic import InternalTopicSettings

TRANSACTION_STATE_TOPIC = "__transaction_state"


def partition_for_transactional_id(transactional_id: str, num_partitions: int) -> int:
    """Kafka's `Utils.abs(transactionalId.hashCode) % transactionTopicPartitionCount`."""
    return partition_for_key(transactional_id, num_partitions)


def transaction_state_topic_settings(config: Any) -> InternalTopicSettings:
    """The `transaction.state.log.*` settings, with Kafka's transaction log configs."""
    return InternalTopicSettings(
        TRANSACTION_STATE_TOPIC, config.transaction_state_log_num_partitions,
        config.transaction_state_log_replication_factor,
        (("cleanup.policy", "compact"), ("compression.type", "uncompressed"),
         ("min.insync.replicas", str(config.transaction_state_log_min_isr)),
         ("unclean.leader.election.enable", "false"),
         ("segment.bytes", str(config.transaction_state_log_segment_bytes))),
        replication_factor_key="transaction.state.log.replication.factor",
        users="transactional producers get no coordinator")
