"""The group leader's share of a rebalance, without I/O: reading the members'
subscriptions from the JoinGroup answer, computing their assignments, and telling when
the partition counts the assignment was computed from no longer match the metadata."""

from __future__ import annotations

import logging
from typing import Any, Iterable, Mapping, Sequence

from clients.consumer.group.assignors import Assignor, MemberSubscription
from clients.consumer.group.protocol import (
    ASSIGNMENT_MAX_VERSION,
    Assignment,
    Subscription,
    decode_subscription,
    encode_assignment,
)
from clients.protocol import ProtocolError

logger = logging.getLogger(__name__)

# (member, the subscription version it sent)
Member = tuple[MemberSubscription, int]


def read_members(group_id: str, members: Iterable[Mapping[str, Any]]) -> list[Member]:
    """The JoinGroup answer's members; one whose metadata is unreadable subscribes to
    nothing (and so gets nothing), rather than failing the whole group."""
    out: list[Member] = []
    for member in members:
        try:
            sub = decode_subscription(member["metadata"])
        except ProtocolError as exc:
            logger.warning("group %s: member %s sent unreadable metadata (%s); it gets "
                           "nothing", group_id, member["member_id"], exc)
            sub = Subscription(())
        out.append((MemberSubscription(member["member_id"], sub.topics,
                                       member.get("group_instance_id"),
                                       sub.owned_partitions, sub.generation_id,
                                       sub.user_data), sub.version))
    return out


def group_topics(members: Sequence[Member]) -> list[str]:
    return sorted({t for m, _ in members for t in m.topics})


def compute_assignments(assignor: Assignor, members: Sequence[Member],
                        partition_counts: Mapping[str, int]) -> dict[str, bytes]:
    """Every member's assignment bytes under ``assignor``."""
    chosen = assignor.assign(dict(partition_counts), [m for m, _ in members])
    # Encode at the lowest subscription version in the group, so every member can read it.
    version = min([v for _, v in members] + [ASSIGNMENT_MAX_VERSION])
    return {m.member_id: encode_assignment(Assignment(tuple(chosen.get(m.member_id, ())),
                                                      None, version))
            for m, _ in members}


def counts_changed(assigned_from: Mapping[str, int | None],
                   current: Mapping[str, int | None]) -> list[str]:
    """The topics whose partition count differs from the one the assignment used.

    ``current`` maps a topic to its count, None when the topic does not exist; a topic
    left out (its metadata had another, probably passing, error) is not compared."""
    return sorted(t for t, count in assigned_from.items()
                  if t in current and current[t] != count)
