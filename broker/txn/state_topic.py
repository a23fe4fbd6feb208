"""`__transaction_state`: its settings, and which partition (so which coordinator) owns a
transactional id."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from broker.coordinator.routing import partition_for_key

TRANSACTION_STATE_TOPIC = "__transaction_state"


def partition_for_transactional_id(transactional_id: str, num_partitions: int) -> int:
    """Kafka's `Utils.abs(transactionalId.hashCode) % transactionTopicPartitionCount`."""
    return partition_for_key(transactional_id, num_partitions)


@dataclass(frozen=True)
class TransactionStateTopicSettings:
    """The `transaction.state.log.*` settings the topic is created with."""

    num_partitions: int = 50
    replication_factor: int = 3
    min_isr: int = 2
    segment_bytes: int = 104_857_600
    topic = TRANSACTION_STATE_TOPIC
    replication_factor_key = "transaction.state.log.replication.factor"
    users = "transactional producers get no coordinator"

    @classmethod
    def from_config(cls, config: Any) -> "TransactionStateTopicSettings":
        return cls(config.transaction_state_log_num_partitions,
                   config.transaction_state_log_replication_factor,
                   config.transaction_state_log_min_isr,
                   config.transaction_state_log_segment_bytes)

    def create_request(self) -> dict[str, Any]:
        """The CreateTopics entry (Kafka's transaction log configs)."""
        return {"name": TRANSACTION_STATE_TOPIC, "num_partitions": self.num_partitions,
                "replication_factor": self.replication_factor, "assignments": [],
                "configs": [{"name": "cleanup.policy", "value": "compact"},
                            {"name": "compression.type", "value": "uncompressed"},
                            {"name": "min.insync.replicas", "value": str(self.min_isr)},
                            {"name": "unclean.leader.election.enable", "value": "false"},
                            {"name": "segment.bytes", "value": str(self.segment_bytes)}]}
