"""The trio consumer: ``async with Consumer(config) as consumer: ...`` (manual assignment).

``poll`` returns buffered records, or fetches from every assigned partition's leader at
once (one Fetch per broker) until records arrive or the timeout passes. Consumer groups
(``subscribe``, commits) come with the group coordinator; until then ``subscribe`` raises.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Iterable, Mapping

import trio

from clients.admin.cluster import metadata_request
from clients.admin.connections import TrioConnectionPool
from clients.consumer.config import ConsumerConfig
from clients.consumer.core import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ConsumerCore,
    TopicPartition,
)
from clients.consumer.records import ConsumerRecord
from clients.net import KafkaConnectionError
from clients.producer.core import now_ms
from clients.protocol import ApiKey, ErrorCode, KafkaError, ProtocolError

logger = logging.getLogger(__name__)

GROUPS_UNSUPPORTED = ("consumer groups are not supported yet (no group coordinator): use "
                      "assign() with explicit partitions")


class Consumer:
    """A trio consumer with manual partition assignment."""

    def __init__(self, config: ConsumerConfig | Mapping[str, Any] | None = None,
                 **overrides: Any) -> None:
        if not isinstance(config, ConsumerConfig):
            config = ConsumerConfig.from_mapping(config, **overrides)
        self.config = config
        self._core = ConsumerCore(config)
        self._pool = TrioConnectionPool(config.bootstrap_servers, config.client_id,
                                        config.connect_timeout_ms / 1000,
                                        config.request_timeout_ms / 1000)

    async def __aenter__(self) -> Consumer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # ---- assignment ----

    def subscribe(self, topics: Iterable[str]) -> None:
        raise NotImplementedError(GROUPS_UNSUPPORTED)

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Consume exactly these (topic, partition) pairs, replacing any earlier set."""
        self._core.assign(partitions)

    def assignment(self) -> list[TopicPartition]:
        return self._core.assignment

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._core.seek(tp, offset)

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._core.request_reset(partitions, EARLIEST_TIMESTAMP)

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._core.request_reset(partitions, LATEST_TIMESTAMP)

    async def position(self, tp: TopicPartition) -> int:
        """The next offset to be returned for ``tp``, resolving a pending reset first."""
        deadline = trio.current_time() + self.config.request_timeout_ms / 1000
        while (position := self._core.position(tp)) is None:
            if trio.current_time() >= deadline:
                raise KafkaError(ErrorCode.REQUEST_TIMED_OUT,
                                 f"no position for {tp[0]}-{tp[1]} in time")
            await self._update_positions()
            self._core.raise_errors()
            if self._core.position(tp) is None:
                await trio.sleep(self.config.retry_backoff_ms / 1000)
        return position

    async def partitions_for(self, topic: str) -> list[int]:
        """The topic's partition ids from fresh metadata; KafkaError if it does not exist."""
        response = await self._pool.request_any(ApiKey.METADATA, metadata_request([topic]),
                                                self._core.cluster.brokers.values())
        self._core.apply_metadata(response, now_ms())
        error = self._core.cluster.topic_error(topic)
        if error is not None:
            raise KafkaError(error, f"topic {topic!r}: {error.message}")
        return sorted(self._core.cluster.topics[topic].partitions)

    # ---- polling ----

    async def poll(self, timeout_ms: float = 0, max_records: int | None = None
                   ) -> list[ConsumerRecord]:
        """Records from the assigned partitions, at most ``max_records`` (default
        ``max.poll.records``); an empty list once ``timeout_ms`` passes without any."""
        limit = max_records or self.config.max_poll_records
        deadline = trio.current_time() + max(timeout_ms, 0) / 1000
        while True:
            self._core.raise_errors()
            records = self._core.drain(limit)
            if records:
                return records
            if not self._core.assignment:
                await trio.sleep_until(deadline)
                return []
            await self._update_positions()
            self._core.raise_errors()
            remaining_ms = max((deadline - trio.current_time()) * 1000, 0)
            requests = self._core.fetch_requests(
                int(min(self.config.fetch_max_wait_ms, math.floor(remaining_ms))))
            if requests:
                async with trio.open_nursery() as nursery:
                    for node_id, body in requests.items():
                        nursery.start_soon(self._fetch, node_id, body)
            elif remaining_ms > 0:
                await trio.sleep(min(self.config.retry_backoff_ms, remaining_ms) / 1000)
            if trio.current_time() >= deadline and not self._core.has_buffered():
                self._core.raise_errors()
                return []

    async def close(self) -> None:
        await self._pool.aclose()

    # ---- internals ----

    async def _refresh_metadata(self) -> None:
        body = metadata_request(sorted(self._core.topics))
        try:
            response = await self._pool.request_any(ApiKey.METADATA, body,
                                                    self._core.cluster.brokers.values())
        except (KafkaConnectionError, KafkaError, ProtocolError) as exc:
            logger.warning("metadata refresh failed: %s", exc)
            return
        self._core.apply_metadata(response, now_ms())

    async def _update_positions(self) -> None:
        if self._core.metadata_due(now_ms()):
            await self._refresh_metadata()
        if not self._core.missing_positions():
            return
        for node_id, body in self._core.list_offsets_requests().items():
            node = self._core.cluster.brokers[node_id]
            try:
                response = await self._pool.request(node, ApiKey.LIST_OFFSETS, body)
            except (KafkaConnectionError, ProtocolError) as exc:
                logger.debug("ListOffsets to broker %d failed: %s", node_id, exc)
                self._core.needs_metadata = True
                continue
            self._core.handle_list_offsets(response)

    async def _fetch(self, node_id: int, body: dict[str, Any]) -> None:
        node = self._core.cluster.brokers[node_id]
        try:
            response = await self._pool.request(node, ApiKey.FETCH, body)
        except (KafkaConnectionError, ProtocolError) as exc:
            logger.debug("Fetch from broker %d failed: %s", node_id, exc)
            self._core.needs_metadata = True
            return
        self._core.handle_fetch(body, response)
