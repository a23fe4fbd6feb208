"""DescribeTopicPartitions (KIP-966) paging over an image: topics in name order, at most
`limit` partitions per response, and the cursor where the next page starts."""

from __future__ import annotations

from typing import Sequence

from clients.protocol import ZERO_UUID, ErrorCode
from clients.protocol.messages.describe_topic_partitions import (
    DescribeTopicPartitionsResponseData,
)
from metadata.describe import INTERNAL_TOPICS, describe_partition
from metadata.image import MetadataImage, PartitionRegistration

Response = DescribeTopicPartitionsResponseData
Topic = Response.DescribeTopicPartitionsResponseTopic
Partition = Response.DescribeTopicPartitionsResponsePartition


def _error_topic(name: str, code: int) -> Topic:
    return Topic(error_code=code, name=name, topic_id=ZERO_UUID,
                 is_internal=name in INTERNAL_TOPICS)


def _partition(image: MetadataImage, pid: int, part: PartitionRegistration,
               listener: str | None) -> Partition:
    # The same state Metadata answers; no eligible leader replicas (null) without ELR.
    entry = describe_partition(image, pid, part, listener)
    return Partition(error_code=entry.error_code, partition_index=entry.partition_index,
                     leader_id=entry.leader_id, leader_epoch=entry.leader_epoch,
                     replica_nodes=entry.replica_nodes, isr_nodes=entry.isr_nodes,
                     offline_replicas=entry.offline_replicas)


def topic_partition_page(image: MetadataImage, topics: Sequence[tuple[str, int]], limit: int,
                         cursor: tuple[str, int] | None, listener: str | None = None
                         ) -> DescribeTopicPartitionsResponseData:
    """The response's `topics` and `next_cursor` for `topics` ((name, error code) pairs; an
    error topic is answered with its code and counts no partitions), starting at `cursor`."""
    ordered = sorted(topics)
    if cursor is not None:
        ordered = [t for t in ordered if t[0] >= cursor[0]]
    out: list[Topic] = []
    remaining = limit
    next_cursor = None
    for name, code in ordered:
        if remaining <= 0:
            next_cursor = Response.Cursor(topic_name=name, partition_index=0)
            break
        topic = image.topic(name)
        if code != ErrorCode.NONE or topic is None:
            out.append(_error_topic(name, code or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        start = cursor[1] if cursor is not None and name == cursor[0] else 0
        pids = [pid for pid in sorted(topic.partitions) if pid >= start]
        page, rest = pids[:remaining], pids[remaining:]
        remaining -= len(page)
        out.append(Topic(error_code=ErrorCode.NONE, name=name, topic_id=topic.topic_id,
                         is_internal=name in INTERNAL_TOPICS,
                         partitions=[_partition(image, pid, topic.partitions[pid], listener)
                                     for pid in page]))
        if rest:
            next_cursor = Response.Cursor(topic_name=name, partition_index=rest[0])
            break
    return Response(topics=out, next_cursor=next_cursor)
