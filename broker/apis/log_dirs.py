"""DescribeLogDirs (v1-4): this broker's log directories and the replicas in each, with
their size and offset lag (Kafka's: how far the log end offset is behind the high
watermark, 0 for a leader; -1 for a log without a partition)."""

from __future__ import annotations

import shutil
from pathlib import Path
from broker.apis.request import DecodedRequest, RequestContext, RequestRouter
from broker.replica.manager import ReplicaManager
from clients.protocol import ApiKey, ErrorCode
from clients.protocol.messages.describe_log_dirs import (
    DescribeLogDirsRequestData,
    DescribeLogDirsResponseData,
)

Response = DescribeLogDirsResponseData

INVALID_OFFSET_LAG = -1


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
            results=[self._describe(path, wanted) for path in self._replicas.log_manager.log_dirs])

    def _describe(self, path: Path,
                  wanted: set[tuple[str, int]] | None) -> Response.DescribeLogDirsResult:
        logs = self._replicas.log_manager
        topics: dict[str, list[Response.DescribeLogDirsPartition]] = {}
        for log in sorted(logs.logs(), key=lambda l: (l.topic, l.partition)):
            key = (log.topic, log.partition)
            if logs.log_dir_of(*key) != path or (wanted is not None and key not in wanted):
                continue
            partition = self._replicas.get_partition(*key)
            lag = (INVALID_OFFSET_LAG if partition is None
                   else max(partition.high_watermark - log.log_end_offset, 0))
            topics.setdefault(log.topic, []).append(
                Response.DescribeLogDirsPartition(
                    partition_index=log.partition, partition_size=log.size_in_bytes,
                    offset_lag=lag, is_future_key=False))
        try:
            usage = shutil.disk_usage(path)
            total, usable = usage.total, usage.free
        except OSError:
            total = usable = -1
        return Response.DescribeLogDirsResult(
            error_code=ErrorCode.NONE, log_dir=str(path.resolve()),
            topics=[Response.DescribeLogDirsTopic(name=name, partitions=parts)
                    for name, parts in topics.items()],
            total_bytes=total, usable_bytes=usable)


def describe_log_dirs_error(body: DescribeLogDirsRequestData, version: int, code: int,
                            message: str | None = None) -> DescribeLogDirsResponseData:
    """The top-level error (v3+) and no directories."""
    return DescribeLogDirsResponseData(error_code=code)
