"""Committed offsets: OffsetCommit validation, OffsetFetch answers and retention (Kafka 2.1+:
an Empty group's offsets expire `offsets.retention.minutes` after it became Empty). Pure.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol, Sequence

from broker.group.membership import validate_member
from broker.group.model import (CONSUMER_PROTOCOL_TYPE, ClassicGroupState, Effects, Group,
                                GroupWrite)
from broker.group.records import GroupKey, OffsetKey, OffsetValue
from clients.consumer.group.protocol import decode_subscription
from clients.protocol import ErrorCode, ProtocolError
from clients.protocol.messages.offset_commit import OffsetCommitRequestData
from clients.protocol.messages.offset_fetch import OffsetFetchRequestData

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class RequestedTopic(Protocol):
    """A topic of an OffsetFetch request (before v8, or in one of v8's groups)."""

    name: str
    partition_indexes: list[int]


@dataclass(frozen=True)
class FetchedPartition:
    """One partition's committed offset as OffsetFetch answers it (-1 and "" when none)."""

    partition: int
    committed_offset: int = -1
    committed_leader_epoch: int = -1
    metadata: str = ""
    error_code: int = int(ErrorCode.NONE)


@dataclass(frozen=True)
class FetchedTopic:
    """A topic's answered partitions, in the order they were asked for."""

    name: str
    partitions: tuple[FetchedPartition, ...]


def join_topics(topics: Iterable[FetchedTopic]) -> list[FetchedTopic]:
    """`topics` with those of one name joined into one, where the name first appears."""
    by_name: dict[str, list[FetchedPartition]] = {}
    for topic in topics:
        by_name.setdefault(topic.name, []).extend(topic.partitions)
    return [FetchedTopic(name, tuple(parts)) for name, parts in by_name.items()]


def failed_topics(topics: Sequence[RequestedTopic] | None, code: int) -> list[FetchedTopic]:
    """`code` for every partition of `topics`, with no offsets."""
    return [FetchedTopic(t.name, tuple(FetchedPartition(index, error_code=int(code))
                                       for index in t.partition_indexes))
            for t in topics or ()]


def commit_error(code: int) -> int:
    """The OffsetCommit error for a failed write (Kafka's commit callback mapping)."""
    if code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT,
                ErrorCode.COORDINATOR_NOT_AVAILABLE):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR,
                ErrorCode.NOT_COORDINATOR):
        return ErrorCode.NOT_COORDINATOR
    if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE,
                ErrorCode.INVALID_FETCH_SIZE):
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
    return code


@dataclass
class CommitResult:
    """Per-partition codes of an OffsetCommit; once `write` (if any) has run its `then`,
    the codes are final."""

    codes: dict[TopicPartition, int] = field(default_factory=dict)
    write: GroupWrite | None = None


def commit_partitions(request: OffsetCommitRequestData
                      ) -> list[tuple[str, OffsetCommitRequestData.OffsetCommitRequestPartition]]:
    """(topic, partition) of each partition an OffsetCommit names."""
    return [(t.name, p) for t in request.topics for p in t.partitions]


def validate_commit(group: Group, generation: int, member_id: str,
                    instance_id: str | None) -> int:
    """Kafka's validateOffsetCommit plus its state check."""
    if group.state is ClassicGroupState.DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if generation >= 0 or member_id or instance_id is not None:
        code = validate_member(group, member_id, instance_id)
        if code:
            return code
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
    elif group.state is not ClassicGroupState.EMPTY:
        # Only members may commit for a group that has members.
        return ErrorCode.UNKNOWN_MEMBER_ID
    if group.state is ClassicGroupState.COMPLETING_REBALANCE:
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.NONE


def commit_offsets(groups: dict[str, Group], request: OffsetCommitRequestData, now_ms: int, *,
                   partition_for: Callable[[str], int], metadata_max_bytes: int,
                   topic_exists: Callable[[str], bool] | None = None,
                   touch: Callable[[Group, str, int], None] | None = None) -> CommitResult:
    """Validate an OffsetCommit; the offsets become visible once the returned write commits."""
    group_id = request.group_id
    generation = request.generation_id_or_member_epoch
    member_id = request.member_id
    instance_id = request.group_instance_id
    retention = request.retention_time_ms
    wanted = commit_partitions(request)
    result = CommitResult()

    def fail_all(code: int) -> CommitResult:
        result.codes = {(topic, p.partition_index): code for topic, p in wanted}
        return result

    if not group_id:
        return fail_all(ErrorCode.INVALID_GROUP_ID)
    group = groups.get(group_id)
    if group is None:
        if generation >= 0:
            return fail_all(ErrorCode.ILLEGAL_GENERATION)
        # A group that does not use the coordinator for membership (assign() users).
        group = Group(group_id, partition_for(group_id), state_timestamp=now_ms)
        groups[group_id] = group
    code = validate_commit(group, generation, member_id, instance_id)
    if code:
        return fail_all(code)
    if touch is not None and member_id:
        touch(group, member_id, now_ms)
    entries: list[tuple[OffsetKey, OffsetValue]] = []
    for topic, p in wanted:
        tp = (topic, p.partition_index)
        metadata = p.committed_metadata or ""
        if topic_exists is not None and not topic_exists(topic):
            result.codes[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        elif len(metadata) > metadata_max_bytes:
            result.codes[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
        else:
            result.codes[tp] = ErrorCode.NONE
            value = OffsetValue(p.committed_offset, p.committed_leader_epoch, metadata, now_ms,
                                now_ms + retention if retention >= 0 else -1)
            entries.append((OffsetKey(group_id, *tp), value))
    if not entries:
        return result
    for key, _ in entries:
        tp = (key.topic, key.partition)
        group.pending_offset_commits[tp] = group.pending_offset_commits.get(tp, 0) + 1

    def written(code: int) -> Effects:
        for key, value in entries:
            tp = (key.topic, key.partition)
            left = group.pending_offset_commits.get(tp, 1) - 1
            if left:
                group.pending_offset_commits[tp] = left
            else:
                group.pending_offset_commits.pop(tp, None)
            if code:
                result.codes[tp] = commit_error(code)
            elif group.state is not ClassicGroupState.DEAD:
                group.offsets[tp] = value
        return Effects()

    result.write = GroupWrite(group.partition, list(entries), written, reschedules=False)
    return result


def fetch_offsets(group: Group | None, topics: Sequence[RequestedTopic] | None,
                  require_stable: bool = False) -> list[FetchedTopic]:
    """OffsetFetch topics for one group: the requested partitions (-1 when none committed),
    or every committed offset when `topics` is None. With `require_stable`, a requested
    partition whose commit is still being written answers UNSTABLE_OFFSET_COMMIT (Kafka's
    classic coordinator: the client retries until the commit settles)."""
    offsets = {} if group is None or group.state is ClassicGroupState.DEAD else group.offsets
    pending: dict[TopicPartition, int] = {}
    # Kafka's listing of every committed offset (topics None) skips the stability check.
    if group is not None and require_stable and topics is not None:
        pending = group.pending_offset_commits

    def entry(tp: TopicPartition) -> FetchedPartition:
        value = offsets.get(tp)
        if tp in pending or (group is not None and require_stable and topics is not None
                             and group.has_pending_txn_offset(tp)):
            return FetchedPartition(tp[1], error_code=int(ErrorCode.UNSTABLE_OFFSET_COMMIT))
        if value is None:
            return FetchedPartition(tp[1])
        return FetchedPartition(tp[1], value.offset, value.leader_epoch, value.metadata)

    if topics is None:
        return join_topics(FetchedTopic(tp[0], (entry(tp),)) for tp in sorted(offsets))
    return join_topics(FetchedTopic(t.name, tuple(entry((t.name, index))
                                                  for index in t.partition_indexes))
                       for t in topics)


def fetch_slices(topics: Sequence[RequestedTopic], size: int
                 ) -> list[list[OffsetFetchRequestData.OffsetFetchRequestTopic]]:
    """OffsetFetch request topics cut into runs of about `size` partitions each, a topic's
    partitions split over several runs when it has more; fetching the runs one after another
    and joining their topics by name (`join_topics`) gives `fetch_offsets` of them all."""
    runs: list[list[OffsetFetchRequestData.OffsetFetchRequestTopic]] = [[]]
    room = size
    for topic in topics:
        indexes = topic.partition_indexes
        start = 0
        while True:
            if room <= 0:
                runs.append([])
                room = size
            taken = indexes[start:start + room]
            runs[-1].append(OffsetFetchRequestData.OffsetFetchRequestTopic(
                name=topic.name, partition_indexes=taken))
            room -= max(len(taken), 1)
            start += len(taken)
            if start >= len(indexes):
                break
    return [run for run in runs if run]


def consumer_subscription(metadata: bytes) -> set[str] | None:
    """Topics of a ConsumerProtocol subscription; None if unreadable."""
    try:
        return set(decode_subscription(metadata).topics)
    except ProtocolError:
        return None


def _subscribed_topics(group: Group) -> set[str] | None:
    topics: set[str] = set()
    for member in group.members.values():
        subscribed = consumer_subscription(member.metadata_for(group.protocol_name))
        if subscribed is None:
            return None
        topics |= subscribed
    return topics


def expired_offsets(group: Group, now_ms: int, retention_ms: int) -> list[TopicPartition]:
    """Kafka's removeExpiredOffsets choice of partitions (not yet removed)."""
    subscribed: set[str] = set()
    if group.protocol_type is None and not group.members:
        def base(value: OffsetValue) -> int:
            return value.commit_timestamp
    elif group.state is ClassicGroupState.EMPTY:
        def base(value: OffsetValue) -> int:
            return group.state_timestamp if group.state_timestamp >= 0 else value.commit_timestamp
    elif (group.protocol_type == CONSUMER_PROTOCOL_TYPE and group.state is ClassicGroupState.STABLE
          and (topics := _subscribed_topics(group)) is not None):
        subscribed = topics

        def base(value: OffsetValue) -> int:
            return value.commit_timestamp
    else:
        return []
    expired = []
    for tp, value in group.offsets.items():
        if (tp[0] in subscribed or tp in group.pending_offset_commits
                or group.has_pending_txn_offset(tp)):
            continue
        if value.expire_timestamp >= 0:
            if now_ms >= value.expire_timestamp:
                expired.append(tp)
        elif now_ms - base(value) >= retention_ms:
            expired.append(tp)
    return expired


def expire_offsets(groups: dict[str, Group], now_ms: int, retention_ms: int) -> Effects:
    """Remove expired offsets, and Empty groups left without offsets; tombstones for both."""
    writes: dict[int, list[tuple[Any, Any]]] = {}
    for group in list(groups.values()):
        tombstones: list[tuple[Any, Any]] = []
        for tp in expired_offsets(group, now_ms, retention_ms):
            del group.offsets[tp]
            tombstones.append((OffsetKey(group.group_id, *tp), None))
        if (group.state is ClassicGroupState.EMPTY and not group.offsets
                and not group.pending_offset_commits and not group.pending_members
                and not group.pending_txn_offsets):
            group.transition(ClassicGroupState.DEAD, now_ms)
            del groups[group.group_id]
            tombstones.append((GroupKey(group.group_id), None))
        if tombstones:
            logger.info("group %s: removed %d expired offset(s)%s", group.group_id,
                        sum(isinstance(k, OffsetKey) for k, _ in tombstones),
                        " and the empty group" if group.state is ClassicGroupState.DEAD else "")
            writes.setdefault(group.partition, []).extend(tombstones)
    return Effects(writes=[GroupWrite(partition, entries) for partition, entries in writes.items()])


def delete_group(groups: dict[str, Group], group_id: str, now_ms: int
                 ) -> tuple[int, GroupWrite | None]:
    """DeleteGroups for one group: its code and the tombstones to write."""
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID, None
    group = groups.get(group_id)
    if group is None or group.state is ClassicGroupState.DEAD:
        return ErrorCode.GROUP_ID_NOT_FOUND, None
    if group.state is not ClassicGroupState.EMPTY:
        return ErrorCode.NON_EMPTY_GROUP, None
    group.transition(ClassicGroupState.DEAD, now_ms)
    del groups[group_id]
    tombstones: list[tuple[Any, Any]] = [(OffsetKey(group_id, *tp), None) for tp in group.offsets]
    tombstones.append((GroupKey(group_id), None))
    group.offsets.clear()
    logger.info("group %s: deleted", group_id)
    return ErrorCode.NONE, GroupWrite(group.partition, tombstones)


def delete_offsets(groups: dict[str, Group], group_id: str, partitions: list[TopicPartition]
                   ) -> tuple[int, dict[TopicPartition, int], GroupWrite | None]:
    """OffsetDelete (Kafka's handleDeleteOffsets): the group's error, each partition's, and
    the tombstones to write. An Empty group loses every named offset; a consumer group keeps
    those of topics its members subscribe to (GROUP_SUBSCRIBED_TO_TOPIC); any other active
    group refuses (NON_EMPTY_GROUP)."""
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID, {}, None
    group = groups.get(group_id)
    if group is None or group.state is ClassicGroupState.DEAD:
        return ErrorCode.GROUP_ID_NOT_FOUND, {}, None
    if group.state is ClassicGroupState.EMPTY:
        subscribed: set[str] = set()
    elif group.protocol_type == CONSUMER_PROTOCOL_TYPE:
        subscribed = _subscribed_topics(group) or set()
    else:
        return ErrorCode.NON_EMPTY_GROUP, {}, None
    codes: dict[TopicPartition, int] = {}
    tombstones: list[tuple[Any, Any]] = []
    for tp in partitions:
        if tp[0] in subscribed:
            codes[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            continue
        codes[tp] = ErrorCode.NONE
        if group.offsets.pop(tp, None) is not None:
            tombstones.append((OffsetKey(group_id, *tp), None))
    if tombstones:
        logger.info("group %s: deleted %d offset(s)", group_id, len(tombstones))
    write = GroupWrite(group.partition, tombstones) if tombstones else None
    return ErrorCode.NONE, codes, write
