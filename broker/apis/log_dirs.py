"""DescribeLogDirs (v1-4): this broker's log directories and the replicas in each, with
their size and offset lag (Kafka's: how far the log end offset is behind the high
watermark, 0 for a leader; -1 for a log without a partition)."""

from __future__ import annotations

from broker.apis.request import DecodedRequest, RequestContext, RequestRouter
from broker.replica.leader_queries import LogDirInfo, describe_log_dirs
from broker.replica.manager import ReplicaManager
from clients.protocol import ApiKey, ErrorCode
from clients.protocol.messages.describe_log_dirs import (
    DescribeLogDirsRequestData,
    DescribeLogDirsResponseData,
)

Response = DescribeLogDirsResponseData



class DescribeLogDirsHandler:
    """Answers DescribeLogDirs from the log manager and replica manager."""

    def __init__(self, replicas: ReplicaManager) -> None:
        self._replicas = replicas

    def register(self, router: RequestRouter) -> None:
        router.register(ApiKey.DESCRIBE_LOG_DIRS, self.handle, describe_log_dirs_error)

    async def handle(self, request: DecodedRequest,
                     ctx: RequestContext) -> DescribeLogDirsResponseData:
        body: DescribeLogDirsRequestData = request.body
        wanted = None if body.topics is None else {
            (entry.topic, p) for entry in body.topics for p in entry.partitions}
        return DescribeLogDirsResponseData(
            error_code=ErrorCode.NONE,
            results=[_result(info) for info in describe_log_dirs(self._replicas, wanted)])


def _result(info: LogDirInfo) -> Response.DescribeLogDirsResult:
    topics: dict[str, list[Response.DescribeLogDirsPartition]] = {}
    for replica in info.replicas:
        topics.setdefault(replica.topic, []).append(Response.DescribeLogDirsPartition(
            partition_index=replica.partition, partition_size=replica.size_bytes,
            offset_lag=replica.offset_lag, is_future_key=False))
    return Response.DescribeLogDirsResult(
        error_code=ErrorCode.NONE, log_dir=info.path,
        topics=[Response.DescribeLogDirsTopic(name=name, partitions=parts)
                for name, parts in topics.items()],
        total_bytes=info.total_bytes, usable_bytes=info.usable_bytes)


def describe_log_dirs_error(body: DescribeLogDirsRequestData, version: int, code: int,
                            message: str | None = None) -> DescribeLogDirsResponseData:
    """The top-level error (v3+) and no directories."""
    return DescribeLogDirsResponseData(error_code=code)
