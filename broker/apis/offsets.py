"""ListOffsets (v1-7), OffsetForLeaderEpoch (v2-4) and DeleteRecords (v0-2) on leader logs."""

from __future__ import annotations

from typing import Iterable

from broker.apis.authorization import ALLOW_ALL, AclOperation, Authorization, ResourceType
from broker.apis.common import PARTITION_ERRORS, Slicer, error_code_of
from broker.apis.request import RequestContext, DecodedRequest, RequestRouter
from broker.replica.leader_queries import (
    MAX_TIMESTAMP,
    delete_records_before,
    end_offset_for_epoch,
    offset_for_timestamp,
)
from broker.replica.manager import ReplicaManager
from clients.protocol import ApiKey, ErrorCode
from clients.protocol.messages.delete_records import (
    DeleteRecordsRequestData,
    DeleteRecordsResponseData,
)
from clients.protocol.messages.list_offsets import ListOffsetsRequestData, ListOffsetsResponseData
from clients.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequestData,
    OffsetForLeaderEpochResponseData,
)


ListOffsetsPartition = ListOffsetsRequestData.ListOffsetsPartition
ListOffsetsAnswer = ListOffsetsResponseData.ListOffsetsPartitionResponse
EpochAnswer = OffsetForLeaderEpochResponseData.EpochEndOffset
DeleteRecordsPartition = DeleteRecordsRequestData.DeleteRecordsPartition
DeleteAnswer = DeleteRecordsResponseData.DeleteRecordsPartitionResult

_FIRST_VERSION_WITH_MAX_TIMESTAMP = 7
_FIRST_VERSION_WITH_LEADER_EPOCH = 4


def _list_offsets_entry(partition: int, code: int = ErrorCode.NONE) -> ListOffsetsAnswer:
    return ListOffsetsAnswer(partition_index=partition, error_code=code)


def _epoch_entry(partition: int, code: int = ErrorCode.NONE) -> EpochAnswer:
    return EpochAnswer(error_code=code, partition=partition)


def _delete_entry(partition: int, code: int = ErrorCode.NONE) -> DeleteAnswer:
    return DeleteAnswer(partition_index=partition, low_watermark=-1, error_code=code)


def _duplicate_partitions(
        topics: Iterable[ListOffsetsRequestData.ListOffsetsTopic]) -> set[tuple[str, int]]:
    """Partitions named more than once (Kafka answers each with INVALID_REQUEST)."""
    seen: set[tuple[str, int]] = set()
    duplicates: set[tuple[str, int]] = set()
    for topic in topics:
        for p in topic.partitions:
            key = (topic.name, p.partition_index)
            (duplicates if key in seen else seen).add(key)
    return duplicates


class OffsetHandlers:
    """The offset-lookup and log-start APIs."""

    def __init__(self, replicas: ReplicaManager, authz: Authorization = ALLOW_ALL) -> None:
        self._replicas = replicas
        self._authz = authz

    def _topics_allowed(self, ctx: RequestContext, operation: AclOperation,
                        names: Iterable[str]) -> set[str]:
        return self._authz.allowed_names(ctx, operation, ResourceType.TOPIC, names)

    def register(self, router: RequestRouter) -> None:
        router.register(ApiKey.LIST_OFFSETS, self.handle_list_offsets, list_offsets_error_body)
        router.register(ApiKey.OFFSET_FOR_LEADER_EPOCH, self.handle_offset_for_leader_epoch,
                        offset_for_leader_epoch_error_body)
        router.register(ApiKey.DELETE_RECORDS, self.handle_delete_records,
                        delete_records_error_body)

    # -- ListOffsets ---------------------------------------------------------------------

    async def handle_list_offsets(self, request: DecodedRequest,
                                  ctx: RequestContext) -> ListOffsetsResponseData:
        body: ListOffsetsRequestData = request.body
        version = request.api_version
        duplicates = _duplicate_partitions(body.topics)
        describable = self._topics_allowed(ctx, AclOperation.DESCRIBE,
                                           (t.name for t in body.topics))
        topics = []
        slicer = Slicer()
        for topic in body.topics:
            entries = []
            for p in topic.partitions:
                await slicer.tick()
                entry = _list_offsets_entry(p.partition_index)
                if topic.name not in describable:
                    entry.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                elif (topic.name, p.partition_index) in duplicates:
                    entry.error_code = ErrorCode.INVALID_REQUEST
                else:
                    self._list_offset(topic.name, p, entry, version, body.replica_id,
                                      body.isolation_level)
                entries.append(entry)
            topics.append(ListOffsetsResponseData.ListOffsetsTopicResponse(
                name=topic.name, partitions=entries))
        return ListOffsetsResponseData(topics=topics)

    def _list_offset(self, topic: str, p: ListOffsetsPartition, entry: ListOffsetsAnswer,
                     version: int, replica_id: int, isolation_level: int) -> None:
        timestamp = p.timestamp
        if timestamp == MAX_TIMESTAMP and version < _FIRST_VERSION_WITH_MAX_TIMESTAMP:
            entry.error_code = ErrorCode.UNSUPPORTED_VERSION
            return
        try:
            partition = self._replicas.leader_partition(topic, p.partition_index,
                                                        p.current_leader_epoch)
            found = offset_for_timestamp(partition, timestamp, replica_id, isolation_level)
        except PARTITION_ERRORS as exc:
            entry.error_code = error_code_of(exc)
            return
        if found is not None:
            entry.timestamp, entry.offset, leader_epoch = found
            if version >= _FIRST_VERSION_WITH_LEADER_EPOCH:  # older responses lack the field
                entry.leader_epoch = leader_epoch

    # -- OffsetForLeaderEpoch ------------------------------------------------------------

    async def handle_offset_for_leader_epoch(
            self, request: DecodedRequest,
            ctx: RequestContext) -> OffsetForLeaderEpochResponseData:
        body: OffsetForLeaderEpochRequestData = request.body
        if self._authz.cluster(ctx, AclOperation.CLUSTER_ACTION):
            describable = {t.topic for t in body.topics}
        else:
            describable = self._topics_allowed(ctx, AclOperation.DESCRIBE,
                                               (t.topic for t in body.topics))
        topics = []
        slicer = Slicer()
        for topic in body.topics:
            entries = []
            for p in topic.partitions:
                await slicer.tick()
                entry = _epoch_entry(p.partition)
                entries.append(entry)
                if topic.topic not in describable:
                    entry.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                    continue
                try:
                    partition = self._replicas.leader_partition(
                        topic.topic, p.partition, p.current_leader_epoch)
                    entry.leader_epoch, entry.end_offset = end_offset_for_epoch(
                        partition, p.leader_epoch)
                except PARTITION_ERRORS as exc:
                    entry.error_code = error_code_of(exc)
            topics.append(OffsetForLeaderEpochResponseData.OffsetForLeaderTopicResult(
                topic=topic.topic, partitions=entries))
        return OffsetForLeaderEpochResponseData(topics=topics)

    # -- DeleteRecords -------------------------------------------------------------------

    async def handle_delete_records(self, request: DecodedRequest,
                                    ctx: RequestContext) -> DeleteRecordsResponseData:
        body: DeleteRecordsRequestData = request.body
        deletable = self._topics_allowed(ctx, AclOperation.DELETE, (t.name for t in body.topics))
        topics = []
        slicer = Slicer()
        for topic in body.topics:
            entries = []
            for p in topic.partitions:
                await slicer.tick()
                entry = _delete_entry(p.partition_index)
                entries.append(entry)
                if topic.name not in deletable:
                    entry.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                    continue
                try:
                    entry.low_watermark = self._delete_records(topic.name, p)
                except PARTITION_ERRORS as exc:
                    entry.error_code = error_code_of(exc)
            topics.append(DeleteRecordsResponseData.DeleteRecordsTopicResult(
                name=topic.name, partitions=entries))
        return DeleteRecordsResponseData(topics=topics)

    def _delete_records(self, topic: str, p: DeleteRecordsPartition) -> int:
        partition = self._replicas.leader_partition(topic, p.partition_index)
        return delete_records_before(partition, p.offset)


def list_offsets_error_body(body: ListOffsetsRequestData, version: int, error_code: int,
                            message: str | None = None) -> ListOffsetsResponseData:
    """Every partition of the request with `error_code`."""
    return ListOffsetsResponseData(topics=[
        ListOffsetsResponseData.ListOffsetsTopicResponse(
            name=t.name,
            partitions=[_list_offsets_entry(p.partition_index, error_code) for p in t.partitions])
        for t in body.topics])


def offset_for_leader_epoch_error_body(
        body: OffsetForLeaderEpochRequestData, version: int, error_code: int,
        message: str | None = None) -> OffsetForLeaderEpochResponseData:
    """Every partition of the request with `error_code`."""
    return OffsetForLeaderEpochResponseData(topics=[
        OffsetForLeaderEpochResponseData.OffsetForLeaderTopicResult(
            topic=t.topic,
            partitions=[_epoch_entry(p.partition, error_code) for p in t.partitions])
        for t in body.topics])


def delete_records_error_body(body: DeleteRecordsRequestData, version: int, error_code: int,
                              message: str | None = None) -> DeleteRecordsResponseData:
    """Every partition of the request with `error_code`."""
    return DeleteRecordsResponseData(topics=[
        DeleteRecordsResponseData.DeleteRecordsTopicResult(
            name=t.name,
            partitions=[_delete_entry(p.partition_index, error_code) for p in t.partitions])
        for t in body.topics])
