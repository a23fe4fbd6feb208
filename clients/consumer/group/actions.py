"""The vocabulary of the member state machine (``membership``): its states, its settings,
and what it asks its driver to do next."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Sequence

from clients.consumer.group.protocol import PROTOCOL_TYPE, Subscription, encode_subscription
from clients.protocol import ApiKey


class ClassicMemberState(Enum):
    UNJOINED = "unjoined"
    JOINING = "joining"              # JoinGroup sent
    ASSIGNING = "assigning"          # leader: reading partition counts to assign
    SYNCING = "syncing"              # SyncGroup sent
    STABLE = "stable"


@dataclass(frozen=True)
class Send:
    """Send ``body`` as ``api_key``: to the coordinator, or to any broker when not."""

    api_key: ApiKey
    body: dict[str, Any]
    to_coordinator: bool
    timeout_ms: int | None = None
    version: int | None = None      # None: the highest both sides support


@dataclass(frozen=True)
class Wait:
    """Nothing to send before ``until_ms`` (None: until something changes)."""

    until_ms: float | None


@dataclass(frozen=True)
class GroupSettings:
    """The consumer's group settings (``max.poll.interval.ms`` is the rebalance timeout);
    the consumer builds them from its configuration, whose defaults apply."""

    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    heartbeat_interval_ms: int
    retry_backoff_ms: int
    request_timeout_ms: int = 30000
    group_instance_id: str | None = None
    rack_id: str | None = None           # client.rack; sent by the consumer protocol


def join_request(settings: GroupSettings, member_id: str, topics: Sequence[str],
                 owned: Sequence[tuple[str, int]], generation_id: int,
                 protocols: Sequence[tuple[str, bytes | None]]) -> dict[str, Any]:
    """The JoinGroup body: one protocol per assignor (name, its user data), each with the
    same topics, owned partitions and generation."""
    return {"group_id": settings.group_id, "session_timeout_ms": settings.session_timeout_ms,
            "rebalance_timeout_ms": settings.rebalance_timeout_ms, "member_id": member_id,
            "group_instance_id": settings.group_instance_id, "protocol_type": PROTOCOL_TYPE,
            "protocols": [{"name": name, "metadata": encode_subscription(Subscription(
                tuple(topics), user_data, tuple(sorted(owned)), generation_id))}
                for name, user_data in protocols],
            "reason": None}


def sync_request(settings: GroupSettings, generation_id: int, member_id: str,
                 protocol_name: str | None, assignments: dict[str, bytes]) -> dict[str, Any]:
    """The SyncGroup body; only the leader sends ``assignments``."""
    return {"group_id": settings.group_id, "generation_id": generation_id,
            "member_id": member_id, "group_instance_id": settings.group_instance_id,
            "protocol_type": PROTOCOL_TYPE, "protocol_name": protocol_name,
            "assignments": [{"member_id": m, "assignment": a}
                            for m, a in assignments.items()]}
