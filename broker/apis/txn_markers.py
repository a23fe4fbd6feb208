"""WriteTxnMarkers (v0-1) and DescribeProducers (v0) on partition leaders.

WriteTxnMarkers comes from a transaction coordinator: each marker appends a COMMIT or ABORT
control batch, carrying the coordinator epoch, to each named partition it leads, with acks=all
semantics (min.insync.replicas, then the high watermark must pass the marker within the
request timeout). The marker ends the producer's transaction there, moves the LSO, and an
abort is recorded in the aborted-transaction index. Once a marker on a `__consumer_offsets`
partition is replicated, the group coordinator hears of it (its pending transactional offset
commits become visible or are dropped). WriteTxnMarkers needs CLUSTER_ACTION, checked by the
router's hook (BROKER_CLUSTER_OPERATIONS); DescribeProducers needs READ on each topic.
"""

from __future__ import annotations

import inspect
import logging
from typing import Awaitable, Protocol

from broker.apis.authorization import ALLOW_ALL, AclOperation, Authorization, ResourceType
from broker.apis.request import DecodedRequest, RequestContext, RequestRouter
from broker.replica.append import AppendEntry, AppendOrigin, TxnMarker, append_records
from broker.replica.errors import PARTITION_ERRORS, error_code_of
from broker.replica.leader_queries import active_producers
from broker.replica.manager import ReplicaManager
from clients.protocol import ApiKey, ErrorCode
from clients.protocol.messages.describe_producers import (
    DescribeProducersRequestData,
    DescribeProducersResponseData,
)
from clients.protocol.messages.write_txn_markers import (
    WriteTxnMarkersRequestData,
    WriteTxnMarkersResponseData,
)

logger = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
# The message Kafka gives with a partition refused by DescribeProducers.
TOPIC_REFUSED_MESSAGE = "Topic authorization failed."
# Kafka waits request.timeout.ms (its default) for a marker to replicate.
DEFAULT_MARKER_TIMEOUT_MS = 30_000

Marker = WriteTxnMarkersRequestData.WritableTxnMarker
Markers = WriteTxnMarkersResponseData
Producers = DescribeProducersResponseData


class OffsetsMarkerListener(Protocol):
    """Told of each replicated marker on a `__consumer_offsets` partition."""

    def on_offsets_marker(self, partition: int, producer_id: int,
                          committed: bool) -> Awaitable[None] | None: ...


class TxnMarkerHandlers:
    """The leader-side transaction APIs: writing markers and describing producers."""

    def __init__(self, replicas: ReplicaManager, offsets_listener: OffsetsMarkerListener | None = None,
                 timeout_ms: int = DEFAULT_MARKER_TIMEOUT_MS,
                 authz: Authorization = ALLOW_ALL) -> None:
        self._replicas = replicas
        self._authz = authz
        self.offsets_listener = offsets_listener
        self._timeout_ms = timeout_ms

    def register(self, router: RequestRouter) -> None:
        router.register(ApiKey.WRITE_TXN_MARKERS, self.handle_write_txn_markers,
                        write_txn_markers_error_body)
        router.register(ApiKey.DESCRIBE_PRODUCERS, self.handle_describe_producers,
                        describe_producers_error_body)

    # -- WriteTxnMarkers -----------------------------------------------------------------

    async def handle_write_txn_markers(self, request: DecodedRequest,
                                       ctx: RequestContext) -> WriteTxnMarkersResponseData:
        body: WriteTxnMarkersRequestData = request.body
        # (marker, append entry) of every partition named, in request order.
        appends: list[tuple[Marker, AppendEntry]] = []
        for marker in body.markers:
            txn_marker = TxnMarker(marker.transaction_result, marker.producer_id,
                                   marker.producer_epoch, marker.coordinator_epoch)
            for topic in marker.topics:
                for index in topic.partition_indexes:
                    entry = AppendEntry(topic.name, index, marker=txn_marker)
                    if self._replicas.get_partition(topic.name, index) is None:
                        # As Kafka: no local replica at all is UNKNOWN_TOPIC_OR_PARTITION.
                        entry.fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                   f"no replica of {topic.name}-{index} on this broker")
                    appends.append((marker, entry))
        # Markers are written with acks=all semantics (min.insync.replicas, then the HW).
        await append_records(self._replicas, [entry for _, entry in appends], -1,
                             self._timeout_ms, AppendOrigin.COORDINATOR)
        for marker, entry in appends:
            if entry.error_code:
                logger.info("%s marker for producer %d on %s-%d failed: %s",
                            "COMMIT" if marker.transaction_result else "ABORT",
                            marker.producer_id, entry.topic, entry.partition,
                            entry.error_message or ErrorCode.from_code(entry.error_code).name)
            elif entry.topic == OFFSETS_TOPIC:
                await self._tell_offsets_listener(marker, entry)
        answers = iter(entry for _, entry in appends)
        return WriteTxnMarkersResponseData(markers=[
            Markers.WritableTxnMarkerResult(producer_id=marker.producer_id, topics=[
                Markers.WritableTxnMarkerTopicResult(name=topic.name, partitions=[
                    Markers.WritableTxnMarkerPartitionResult(
                        partition_index=index, error_code=next(answers).error_code)
                    for index in topic.partition_indexes])
                for topic in marker.topics])
            for marker in body.markers])

    async def _tell_offsets_listener(self, marker: Marker, entry: AppendEntry) -> None:
        listener = self.offsets_listener
        if listener is None:
            return
        try:
            outcome = listener.on_offsets_marker(entry.partition, marker.producer_id,
                                                 marker.transaction_result)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:  # noqa: BLE001 - answered as Kafka does: the coordinator retries
            logger.exception("group coordinator failed to complete the transaction of producer %d",
                             marker.producer_id)
            entry.fail(ErrorCode.UNKNOWN_SERVER_ERROR)

    # -- DescribeProducers ---------------------------------------------------------------

    async def handle_describe_producers(self, request: DecodedRequest, ctx: RequestContext
                                        ) -> DescribeProducersResponseData:
        body: DescribeProducersRequestData = request.body
        readable = self._authz.allowed_names(ctx, AclOperation.READ, ResourceType.TOPIC,
                                             {t.name for t in body.topics})
        topics = []
        for topic in body.topics:
            entries = []
            for index in topic.partition_indexes:
                entry = Producers.PartitionResponse(partition_index=index)
                if topic.name not in readable:
                    entry.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                    entry.error_message = TOPIC_REFUSED_MESSAGE
                    entries.append(entry)
                    continue
                try:
                    partition = self._replicas.leader_partition(topic.name, index)
                except PARTITION_ERRORS as exc:
                    entry.error_code = error_code_of(exc)
                    entry.error_message = str(exc)
                else:
                    entry.active_producers = [
                        Producers.ProducerState(
                            producer_id=e.producer_id, producer_epoch=e.producer_epoch,
                            last_sequence=e.last_sequence, last_timestamp=e.last_timestamp,
                            coordinator_epoch=e.coordinator_epoch,
                            current_txn_start_offset=e.current_txn_start_offset)
                        for e in active_producers(partition)]
                entries.append(entry)
            topics.append(Producers.TopicResponse(name=topic.name, partitions=entries))
        return DescribeProducersResponseData(topics=topics)


def write_txn_markers_error_body(body: WriteTxnMarkersRequestData, version: int,
                                 error_code: int, message: str | None = None
                                 ) -> WriteTxnMarkersResponseData:
    return WriteTxnMarkersResponseData(markers=[
        Markers.WritableTxnMarkerResult(producer_id=m.producer_id, topics=[
            Markers.WritableTxnMarkerTopicResult(name=t.name, partitions=[
                Markers.WritableTxnMarkerPartitionResult(partition_index=p,
                                                         error_code=error_code)
                for p in t.partition_indexes])
            for t in m.topics])
        for m in body.markers])


def describe_producers_error_body(body: DescribeProducersRequestData, version: int,
                                  error_code: int, message: str | None = None
                                  ) -> DescribeProducersResponseData:
    return DescribeProducersResponseData(topics=[
        Producers.TopicResponse(name=t.name, partitions=[
            Producers.PartitionResponse(partition_index=p, error_code=error_code)
            for p in t.partition_indexes])
        for t in body.topics])
