"""KIP-890 verification on partition leaders: before a transactional batch starts a
transaction on a partition, ask the producer's coordinator (AddPartitionsToTxn v4+ with
verify_only) whether the partition was added to the ongoing transaction.
"""

from __future__ import annotations

import logging
from typing import Callable

from broker.txn.coordinator import TransactionCoordinator
from broker.txn.marker_sender import BrokerChannels
from broker.txn.state_topic import TRANSACTION_STATE_TOPIC
from clients.net import KafkaConnectionError
from clients.protocol import ApiKey, ErrorCode, KafkaError, ProtocolError
from metadata.image import MetadataImage

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

class CoordinatorVerifier:
    """`TransactionVerifier` over the local coordinator when it owns the id, else over the
    inter-broker listener to the broker that does."""

    def __init__(self, broker_id: int, local: TransactionCoordinator,
                 channels: BrokerChannels, image: Callable[[], MetadataImage]) -> None:
        self.broker_id = broker_id
        self._local = local
        self._channels = channels
        self._image = image

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        coordinator = self._coordinator_of(transactional_id)
        if coordinator is None:
            return {tp: int(ErrorCode.COORDINATOR_NOT_AVAILABLE) for tp in partitions}
        if coordinator == self.broker_id:
            codes = self._local.verify_partitions(transactional_id, producer_id,
                                                  producer_epoch, list(partitions))
        else:
            codes = await self._remote(coordinator, transactional_id, producer_id,
                                       producer_epoch, list(partitions))
        # The coordinator's own codes: Produce maps the retriable ones (txn_verification).
        return {tp: int(codes.get(tp, ErrorCode.INVALID_TXN_STATE)) for tp in partitions}

    def _coordinator_of(self, transactional_id: str) -> int | None:
        topic = self._image().topic(TRANSACTION_STATE_TOPIC)
        if topic is None:
            return None
        registration = topic.partitions.get(
            self._local.state.partition_for(transactional_id))
        if registration is None or registration.leader < 0:
            return None
        return registration.leader

    async def _remote(self, broker_id: int, transactional_id: str, producer_id: int,
                      producer_epoch: int, partitions: list[TopicPartition]
                      ) -> dict[TopicPartition, int]:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        body = {"transactions": [{
            "transactional_id": transactional_id, "producer_id": producer_id,
            "producer_epoch": producer_epoch, "verify_only": True,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}]}
        try:
            response = await self._channels.request(broker_id, ApiKey.ADD_PARTITIONS_TO_TXN,
                                                    body)
        except (KafkaConnectionError, ProtocolError, KafkaError) as exc:
            logger.info("verifying %s with broker %d: %s", transactional_id, broker_id, exc)
            return {tp: ErrorCode.COORDINATOR_NOT_AVAILABLE for tp in partitions}
        top = int(response.get("error_code", 0))
        if top:
            return {tp: top for tp in partitions}
        return {(topic["name"], p["partition_index"]): int(p["partition_error_code"])
                for txn in response.get("results_by_transaction") or ()
                for topic in txn.get("topic_results") or ()
                for p in topic.get("results_by_partition") or ()}
