"""Transactional offset commits (TxnOffsetCommit, KIP-98 and KIP-447): written in the
producer's transaction, pending under its producer id until the producer's marker reaches
the group's `__consumer_offsets` partition, then committed or dropped. Pure.
"""

from __future__ import annotations

from typing import Callable

from broker.group.membership import validate_member
from broker.group.model import Effects, Group, ClassicGroupState, GroupWrite
from broker.group.offsets import CommitResult, commit_error
from broker.group.records import OffsetKey, OffsetValue
from clients.protocol import ErrorCode
from clients.protocol.messages.txn_offset_commit import TxnOffsetCommitRequestData


def commit_txn_offsets(groups: dict[str, Group], request: TxnOffsetCommitRequestData,
                       now_ms: int, *,
                       partition_for: Callable[[str], int], metadata_max_bytes: int,
                       topic_exists: Callable[[str], bool] | None = None) -> CommitResult:
    """Validate a TxnOffsetCommit; once its transactional batch is written the offsets are
    pending under the producer id, until the producer's marker commits or aborts them."""
    group_id = request.group_id
    generation = request.generation_id
    member_id = request.member_id
    instance_id = request.group_instance_id
    producer = (request.producer_id, request.producer_epoch)
    wanted = [(t.name, p) for t in request.topics for p in t.partitions]
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
        group = Group(group_id, partition_for(group_id), state_timestamp=now_ms)
        groups[group_id] = group
    if group.state is ClassicGroupState.DEAD:
        return fail_all(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if generation >= 0 or member_id or instance_id is not None:
        # KIP-447: a producer naming the consumer's generation is checked against it.
        code = validate_member(group, member_id, instance_id)
        if code:
            return fail_all(code)
        if generation != group.generation:
            return fail_all(ErrorCode.ILLEGAL_GENERATION)
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
            entries.append((OffsetKey(group_id, *tp),
                            OffsetValue(p.committed_offset, p.committed_leader_epoch,
                                        metadata, now_ms)))
    if not entries:
        return result

    def written(code: int) -> Effects:
        for key, value in entries:
            tp = (key.topic, key.partition)
            if code:
                result.codes[tp] = commit_error(code)
            elif group.state is not ClassicGroupState.DEAD:
                group.pending_txn_offsets.setdefault(producer[0], {})[tp] = value
        return Effects()

    result.write = GroupWrite(group.partition, list(entries), written, producer=producer,
                              reschedules=False)
    return result


def complete_txn_offsets(groups: dict[str, Group], partition: int, producer_id: int,
                         committed: bool) -> int:
    """The producer's marker reached `partition`: its pending offsets of the groups there
    become committed or are dropped. How many groups it touched."""
    touched = 0
    for group in groups.values():
        if group.partition != partition:
            continue
        pending = group.pending_txn_offsets.pop(producer_id, None)
        if pending is None:
            continue
        touched += 1
        if committed and group.state is not ClassicGroupState.DEAD:
            group.offsets.update(pending)
    return touched
