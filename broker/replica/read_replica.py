"""Which replica a consumer should fetch from (KIP-392), decided on the partition leader.

`replica.selector.class` names Kafka's selector: `LeaderSelector` (or none) keeps every
consumer on the leader; `RackAwareReplicaSelector` sends a consumer whose `client.rack`
matches a follower's `broker.rack` (and not the leader's) to the most caught-up such
follower. As in Kafka, only in-sync followers that hold the fetch offset and are reachable on
the consumer's listener are candidates, and the leader is never named as a preferred replica.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from broker.replica.follower_state import FollowerState

RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
LEADER_SELECTOR = "org.apache.kafka.common.replica.LeaderSelector"
SUPPORTED_SELECTORS = (RACK_AWARE_SELECTOR, LEADER_SELECTOR)
NO_PREFERRED_REPLICA = -1


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One replica as a selector sees it (Kafka's ReplicaView)."""

    broker_id: int
    rack: str | None
    log_end_offset: int
    time_since_caught_up_ms: int


def rack_aware_choice(client_rack: str | None, leader: ReplicaView,
                      followers: Iterable[ReplicaView]) -> ReplicaView:
    """RackAwareReplicaSelector: the leader unless `client_rack` names a rack only followers
    are in; then the follower with the highest LEO (ties: caught up most recently, then the
    higher broker id)."""
    if not client_rack:
        return leader
    if leader.rack == client_rack:
        return leader
    same_rack = [r for r in followers if r.rack == client_rack]
    if not same_rack:
        return leader
    return max(same_rack, key=lambda r: (r.log_end_offset, -r.time_since_caught_up_ms,
                                         r.broker_id))


def preferred_read_replica(selector: str | None, client_rack: str | None, *, leader_id: int,
                           leader_log_end_offset: int, log_start_offset: int,
                           isr: Iterable[int], followers: Mapping[int, FollowerState],
                           reachable_racks: Mapping[int, str | None], fetch_offset: int,
                           now_ms: int) -> int:
    """The broker id to answer as `preferred_read_replica`, or NO_PREFERRED_REPLICA when the
    leader serves the fetch itself.

    `reachable_racks` maps the brokers reachable on the consumer's listener to their racks
    (brokers missing from it cannot be chosen). A follower is a candidate while it is in
    `isr` and holds `fetch_offset`: its LEO is at least the offset, and the offset is not
    below the log start (the leader's, which followers track through their fetches).
    """
    if selector != RACK_AWARE_SELECTOR or not client_rack:
        return NO_PREFERRED_REPLICA
    in_sync = set(isr)
    candidates = [
        ReplicaView(broker_id, reachable_racks[broker_id], state.log_end_offset,
                    now_ms - state.last_caught_up_time_ms)
        for broker_id, state in followers.items()
        if broker_id != leader_id and broker_id in in_sync and broker_id in reachable_racks
        and state.log_end_offset >= fetch_offset >= log_start_offset]
    leader = ReplicaView(leader_id, reachable_racks.get(leader_id), leader_log_end_offset, 0)
    chosen = rack_aware_choice(client_rack, leader, candidates)
    return NO_PREFERRED_REPLICA if chosen is leader else chosen.broker_id
