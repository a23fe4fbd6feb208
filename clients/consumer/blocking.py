"""The blocking consumer: the same core driven synchronously, with no threads.

Leaders are fetched from one after another; with several brokers each Fetch may wait up
to its share of the poll timeout (bounded by ``fetch.max.wait.ms``).
"""

from __future__ import annotations

import logging
import time
from typing import Any, Iterable, Mapping

from clients.admin.cluster import metadata_request
from clients.admin.connections import BlockingConnectionPool
from clients.consumer.config import ConsumerConfig
from clients.consumer.core import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ConsumerCore,
    TopicPartition,
)
from clients.consumer.records import ConsumerRecord
from clients.consumer.trio_consumer import GROUPS_UNSUPPORTED
from clients.net import KafkaConnectionError
from clients.producer.core import now_ms
from clients.protocol import ApiKey, ErrorCode, KafkaError, ProtocolError

logger = logging.getLogger(__name__)


class BlockingConsumer:
    """A synchronous consumer with manual partition assignment (see ``Consumer``)."""

    def __init__(self, config: ConsumerConfig | Mapping[str, Any] | None = None,
                 **overrides: Any) -> None:
        if not isinstance(config, ConsumerConfig):
            config = ConsumerConfig.from_mapping(config, **overrides)
        self.config = config
        self._core = ConsumerCore(config)
        self._pool = BlockingConnectionPool(config.bootstrap_servers, config.client_id,
                                            config.request_timeout_ms / 1000)

    def __enter__(self) -> BlockingConsumer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def subscribe(self, topics: Iterable[str]) -> None:
        raise NotImplementedError(GROUPS_UNSUPPORTED)

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        self._core.assign(partitions)

    def assignment(self) -> list[TopicPartition]:
        return self._core.assignment

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._core.seek(tp, offset)

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._core.request_reset(partitions, EARLIEST_TIMESTAMP)

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._core.request_reset(partitions, LATEST_TIMESTAMP)

    def position(self, tp: TopicPartition) -> int:
        deadline = time.monotonic() + self.config.request_timeout_ms / 1000
        while (position := self._core.position(tp)) is None:
            if time.monotonic() >= deadline:
                raise KafkaError(ErrorCode.REQUEST_TIMED_OUT,
                                 f"no position for {tp[0]}-{tp[1]} in time")
            self._update_positions()
            self._core.raise_errors()
            if self._core.position(tp) is None:
                time.sleep(self.config.retry_backoff_ms / 1000)
        return position

    def partitions_for(self, topic: str) -> list[int]:
        response = self._pool.request_any(ApiKey.METADATA, metadata_request([topic]),
                                          self._core.cluster.brokers.values())
        self._core.apply_metadata(response, now_ms())
        error = self._core.cluster.topic_error(topic)
        if error is not None:
            raise KafkaError(error, f"topic {topic!r}: {error.message}")
        return sorted(self._core.cluster.topics[topic].partitions)

    def poll(self, timeout_ms: float = 0, max_records: int | None = None
             ) -> list[ConsumerRecord]:
        limit = max_records or self.config.max_poll_records
        deadline = time.monotonic() + max(timeout_ms, 0) / 1000
        while True:
            self._core.raise_errors()
            records = self._core.drain(limit)
            if records:
                return records
            if not self._core.assignment:
                time.sleep(max(deadline - time.monotonic(), 0))
                return []
            self._update_positions()
            self._core.raise_errors()
            remaining_ms = max((deadline - time.monotonic()) * 1000, 0)
            requests = self._core.fetch_requests(0)
            if requests:
                share = int(min(self.config.fetch_max_wait_ms, remaining_ms / len(requests)))
                for node_id, body in requests.items():
                    body["max_wait_ms"] = share
                    self._fetch(node_id, body)
            elif remaining_ms > 0:
                time.sleep(min(self.config.retry_backoff_ms, remaining_ms) / 1000)
            if time.monotonic() >= deadline and not self._core.has_buffered():
                self._core.raise_errors()
                return []

    def close(self) -> None:
        self._pool.close()

    def _update_positions(self) -> None:
        if self._core.metadata_due(now_ms()):
            body = metadata_request(sorted(self._core.topics))
            try:
                response = self._pool.request_any(ApiKey.METADATA, body,
                                                  self._core.cluster.brokers.values())
                self._core.apply_metadata(response, now_ms())
            except (KafkaConnectionError, KafkaError, ProtocolError) as exc:
                logger.warning("metadata refresh failed: %s", exc)
        if not self._core.missing_positions():
            return
        for node_id, body in self._core.list_offsets_requests().items():
            try:
                response = self._pool.request(self._core.cluster.brokers[node_id],
                                              ApiKey.LIST_OFFSETS, body)
            except (KafkaConnectionError, ProtocolError) as exc:
                logger.debug("ListOffsets to broker %d failed: %s", node_id, exc)
                self._core.needs_metadata = True
                continue
            self._core.handle_list_offsets(response)

    def _fetch(self, node_id: int, body: dict[str, Any]) -> None:
        try:
            response = self._pool.request(self._core.cluster.brokers[node_id],
                                          ApiKey.FETCH, body)
        except (KafkaConnectionError, ProtocolError) as exc:
            logger.debug("Fetch from broker %d failed: %s", node_id, exc)
            self._core.needs_metadata = True
            return
        self._core.handle_fetch(body, response)
