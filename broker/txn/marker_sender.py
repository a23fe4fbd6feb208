"""Sends a finished transaction's markers to the leaders of its partitions (Kafka's
TransactionMarkerChannelManager): one WriteTxnMarkers per leader broker, repeated for the
partitions not yet marked until every leader has written its marker.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import trio

from broker.txn.metadata import TopicPartition
from clients.net import KafkaConnection, KafkaConnectionError
from clients.protocol import ErrorCode, KafkaError, ProtocolError
from metadata.image import MetadataImage

logger = logging.getLogger(__name__)

WRITE_TXN_MARKERS = 27
RETRY_BACKOFF_S = 0.1
MAX_RETRY_BACKOFF_S = 1.0
REQUEST_TIMEOUT_S = 30.0

# Errors after which this coordinator must not go on: a newer one took over.
_FENCED = frozenset({ErrorCode.TRANSACTION_COORDINATOR_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH})
# The partition has nothing to mark (Kafka's completion handler treats these as done).
_DONE = frozenset({ErrorCode.NONE, ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT})


class MarkersFenced(Exception):
    """A leader refused the marker because a newer coordinator epoch or producer epoch
    exists: this coordinator's view of the transaction is stale."""


def marker_request(producer_id: int, epoch: int, commit: bool, coordinator_epoch: int,
                   partitions: list[TopicPartition]) -> dict[str, Any]:
    """WriteTxnMarkers body for one transaction's partitions on one broker."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return {"markers": [{
        "producer_id": producer_id, "producer_epoch": epoch, "transaction_result": commit,
        "coordinator_epoch": coordinator_epoch,
        "topics": [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]}]}


def marker_results(response: dict[str, Any]) -> dict[TopicPartition, int]:
    return {(topic["name"], p["partition_index"]): int(p["error_code"])
            for marker in response.get("markers") or ()
            for topic in marker.get("topics") or ()
            for p in topic.get("partitions") or ()}


class BrokerChannels:
    """One connection per broker on the inter-broker listener, opened on demand."""

    def __init__(self, broker_id: int, image: Callable[[], MetadataImage],
                 listener_name: str) -> None:
        self._client_id = f"raftka-txn-markers-{broker_id}"
        self._image = image
        self._listener = listener_name
        self._connections: dict[int, KafkaConnection] = {}
        self._locks: dict[int, trio.Lock] = {}

    async def request(self, broker_id: int, api_key: int, body: dict[str, Any]
                      ) -> dict[str, Any]:
        """Send to `broker_id`; KafkaConnectionError when it cannot be reached."""
        conn = await self._connection(broker_id)
        try:
            return await conn.request(api_key, body, timeout=REQUEST_TIMEOUT_S)
        except (KafkaConnectionError, ProtocolError):
            self._connections.pop(broker_id, None)
            await conn.aclose()
            raise

    async def _connection(self, broker_id: int) -> KafkaConnection:
        lock = self._locks.setdefault(broker_id, trio.Lock())
        async with lock:
            conn = self._connections.get(broker_id)
            if conn is not None and not conn.closed:
                return conn
            registration = self._image().broker(broker_id)
            endpoint = None if registration is None else registration.endpoint(self._listener)
            if endpoint is None:
                raise KafkaConnectionError(f"broker {broker_id} has no {self._listener} endpoint")
            try:
                conn = await KafkaConnection.connect(endpoint.host, endpoint.port,
                                                     client_id=self._client_id)
            except (ProtocolError, KafkaError) as exc:
                raise KafkaConnectionError(str(exc)) from None
            self._connections[broker_id] = conn
            return conn

    async def aclose(self) -> None:
        connections, self._connections = self._connections, {}
        for conn in connections.values():
            await conn.aclose()


class MarkerSender:
    """Writes one transaction's markers everywhere, however long that takes."""

    def __init__(self, channels: BrokerChannels, image: Callable[[], MetadataImage]) -> None:
        self._channels = channels
        self._image = image

    async def send(self, producer_id: int, epoch: int, commit: bool, coordinator_epoch: int,
                   partitions: frozenset[TopicPartition]) -> None:
        """Return once every partition's leader wrote the marker (a partition whose topic
        was deleted needs none); MarkersFenced if a leader says this coordinator is stale.
        Cancel to stop (leadership of the transaction's state moved)."""
        remaining = set(partitions)
        attempt = 0
        while remaining:
            image = self._image()
            by_leader: dict[int, list[TopicPartition]] = {}
            for tp in list(remaining):
                topic = image.topic(tp[0])
                registration = None if topic is None else topic.partitions.get(tp[1])
                if registration is None:
                    remaining.discard(tp)
                elif registration.leader >= 0:
                    by_leader.setdefault(registration.leader, []).append(tp)
            done: set[TopicPartition] = set()
            fenced: list[str] = []

            async def send_to(broker_id: int, tps: list[TopicPartition]) -> None:
                body = marker_request(producer_id, epoch, commit, coordinator_epoch, tps)
                try:
                    response = await self._channels.request(broker_id, WRITE_TXN_MARKERS, body)
                except (KafkaConnectionError, ProtocolError, KafkaError) as exc:
                    logger.info("markers for producer %d to broker %d: %s", producer_id,
                                broker_id, exc)
                    return
                for tp, code in marker_results(response).items():
                    if code in _DONE:
                        done.add(tp)
                    elif code in _FENCED:
                        fenced.append(f"{tp[0]}-{tp[1]}: {ErrorCode.from_code(code).name}")
                    else:
                        logger.debug("marker for producer %d on %s-%d: %s, retrying",
                                     producer_id, tp[0], tp[1], ErrorCode.from_code(code).name)

            async with trio.open_nursery() as nursery:
                for broker_id, tps in by_leader.items():
                    nursery.start_soon(send_to, broker_id, tps)
            if fenced:
                raise MarkersFenced("; ".join(fenced))
            remaining -= done
            if remaining:
                await trio.sleep(min(RETRY_BACKOFF_S * 2 ** attempt, MAX_RETRY_BACKOFF_S))
                attempt += 1
