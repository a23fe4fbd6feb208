"""Quorum status: the Raft thread publishes an immutable RaftView; readers turn it into QuorumStatus."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class ReplicaStatus(NamedTuple):
    """One quorum member as this node knows it (full information only on the leader)."""

    node_id: int | None
    log_end_offset: int | None
    lag: int | None
    last_contact_ms: int | None


@dataclass(frozen=True)
class QuorumStatus:
    """A consistent picture of the quorum from this node's point of view."""

    node_id: int
    is_voter: bool
    leader_id: int | None
    # The Raft term: the controller epoch.
    epoch: int
    # The commit index.
    high_watermark: int
    applied_offset: int
    log_end_offset: int
    is_leader: bool
    # Leader that has applied an entry of its own term, so every earlier commit is applied.
    is_ready: bool
    voters: tuple[ReplicaStatus, ...]
    observers: tuple[ReplicaStatus, ...]
    # On the leader: milliseconds since a majority of the voters (itself included) was last
    # heard from; None on other members, or while some majority was never heard from.
    majority_contact_age_ms: int | None = None


class PeerView(NamedTuple):
    """Raw facts about one peer; `key` is a pysyncobj address (voter) or observer node id."""

    key: str | int | None
    match_index: int | None
    last_contact: float | None


@dataclass(frozen=True)
class RaftView:
    """What the Raft thread saw at the end of a tick (monotonic clock for contact times)."""

    leader_address: str | None
    term: int
    commit_index: int
    applied_offset: int
    log_end_offset: int
    is_leader: bool
    is_ready: bool
    voters: tuple[PeerView, ...]
    observers: tuple[PeerView, ...]

    def progress_key(self) -> tuple[object, ...]:
        """The fields whose change wakes waiters and listeners."""
        return (self.leader_address, self.term, self.commit_index, self.applied_offset,
                self.is_leader, self.is_ready)


EMPTY_VIEW = RaftView(None, 0, 0, 0, 0, False, False, (), ())


def build_status(view: RaftView, node_id: int, is_voter: bool,
                 address_to_id: dict[str, int], now: float) -> QuorumStatus:
    """Turn a raw view into a QuorumStatus; contact ages are measured against `now`."""
    voters = []
    if is_voter:
        voters.append(ReplicaStatus(node_id, view.log_end_offset, 0 if view.is_leader else None,
                                    0 if view.is_leader else None))
    voters.extend(_replica(address_to_id.get(str(peer.key)), peer, view, now) for peer in view.voters)
    observers = [_replica(peer.key if isinstance(peer.key, int) else None, peer, view, now)
                 for peer in view.observers]
    leader_id = address_to_id.get(view.leader_address) if view.leader_address else None
    return QuorumStatus(
        node_id=node_id,
        is_voter=is_voter,
        leader_id=leader_id,
        epoch=view.term,
        high_watermark=view.commit_index,
        applied_offset=view.applied_offset,
        log_end_offset=view.log_end_offset,
        is_leader=view.is_leader,
        is_ready=view.is_ready,
        voters=tuple(sorted(voters, key=lambda r: (r.node_id is None, r.node_id or 0))),
        observers=tuple(observers),
        majority_contact_age_ms=(majority_contact_age_ms(view, now)
                                 if view.is_leader and is_voter else None),
    )


def majority_contact_age_ms(view: RaftView, now: float) -> int | None:
    """How long ago the leader of `view` last heard from enough voters to make a majority
    with itself (the contact Raft's check-quorum watches); None if it never did."""
    needed = (len(view.voters) + 1) // 2  # peers needed besides the leader itself
    if needed == 0:
        return 0
    contacts = sorted((peer.last_contact for peer in view.voters
                       if peer.last_contact is not None), reverse=True)
    if len(contacts) < needed:
        return None
    return max(0, int((now - contacts[needed - 1]) * 1000))


def _replica(node_id: int | None, peer: PeerView, view: RaftView, now: float) -> ReplicaStatus:
    lag = None
    if view.is_leader and peer.match_index is not None:
        lag = max(0, view.log_end_offset - peer.match_index)
    contact = None if peer.last_contact is None else max(0, int((now - peer.last_contact) * 1000))
    return ReplicaStatus(node_id, peer.match_index, lag, contact)
