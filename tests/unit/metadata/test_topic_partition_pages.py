"""DescribeTopicPartitions paging: name order, the partition limit across topics, cursors."""

from __future__ import annotations

import uuid

from clients.protocol import ErrorCode
from clients.protocol.messages.describe_topic_partitions import (
    DescribeTopicPartitionsResponseData,
)
from metadata.delta import apply_records
from metadata.image import MetadataImage
from metadata.records import PartitionRecord, TopicRecord
from metadata.topic_partition_pages import topic_partition_page


def _image(sizes: dict[str, int]) -> MetadataImage:
    records: list = []
    for name, count in sizes.items():
        tid = uuid.uuid4()
        records.append(TopicRecord(name=name, topic_id=tid))
        records.extend(PartitionRecord(partition_id=p, topic_id=tid, replicas=(1,), isr=(1,),
                                       leader=1, leader_epoch=0, partition_epoch=0)
                       for p in range(count))
    return apply_records(MetadataImage.empty(), records)[1]


def _all_pages(image: MetadataImage, topics: list[tuple[str, int]], limit: int) -> list[list]:
    pages, cursor = [], None
    while True:
        response = topic_partition_page(image, topics, limit, cursor)
        pages.append([(t.name, [p.partition_index for p in t.partitions])
                      for t in response.topics])
        nxt = response.next_cursor
        if nxt is None:
            return pages
        cursor = (nxt.topic_name, nxt.partition_index)


def test_pages_split_topics_and_continue_where_the_cursor_points() -> None:
    image = _image({"b": 3, "a": 2, "c": 1})
    topics = [("c", 0), ("a", 0), ("b", 0)]
    assert _all_pages(image, topics, 2) == [
        [("a", [0, 1])], [("b", [0, 1])], [("b", [2]), ("c", [0])]]
    assert _all_pages(image, topics, 4) == [[("a", [0, 1]), ("b", [0, 1])],
                                            [("b", [2]), ("c", [0])]]
    assert _all_pages(image, topics, 2000) == [[("a", [0, 1]), ("b", [0, 1, 2]), ("c", [0])]]


def test_an_exactly_full_page_points_at_the_next_topic() -> None:
    image = _image({"a": 2, "b": 1})
    response = topic_partition_page(image, [("a", 0), ("b", 0)], 2, None)
    assert response.next_cursor == DescribeTopicPartitionsResponseData.Cursor(
        topic_name="b", partition_index=0)


def test_error_topics_carry_their_code_and_no_partitions() -> None:
    image = _image({"a": 1})
    response = topic_partition_page(
        image, [("a", 0), ("gone", 0), ("secret", ErrorCode.TOPIC_AUTHORIZATION_FAILED)], 10,
        None)
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("a", 0), ("gone", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("secret", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    assert response.next_cursor is None
