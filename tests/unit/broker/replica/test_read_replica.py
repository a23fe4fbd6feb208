"""The preferred-read-replica decision (KIP-392), as Kafka's RackAwareReplicaSelector makes it."""

from __future__ import annotations

import pytest

from broker.config import ServerConfig
from broker.config.errors import ConfigError
from broker.replica.follower_state import FollowerState
from broker.replica.read_replica import (
    LEADER_SELECTOR,
    NO_PREFERRED_REPLICA,
    RACK_AWARE_SELECTOR,
    SUPPORTED_SELECTORS,
    ReplicaView,
    preferred_read_replica,
    rack_aware_choice,
)

NOW = 100_000
RACKS = {1: "a", 2: "b", 3: "b"}


def follower(leo: int, caught_up_ms_ago: int = 0) -> FollowerState:
    return FollowerState(log_end_offset=leo, last_caught_up_time_ms=NOW - caught_up_ms_ago)


def choose(client_rack: str | None = "b", *, selector: str | None = RACK_AWARE_SELECTOR,
           isr: tuple[int, ...] = (1, 2, 3), followers: dict | None = None,
           racks: dict | None = None, fetch_offset: int = 10, log_start: int = 0) -> int:
    return preferred_read_replica(
        selector, client_rack, leader_id=1, leader_log_end_offset=20, log_start_offset=log_start,
        isr=isr, followers=followers if followers is not None else {2: follower(20),
                                                                   3: follower(15)},
        reachable_racks=RACKS if racks is None else racks, fetch_offset=fetch_offset,
        now_ms=NOW)


def test_a_consumer_in_a_followers_rack_goes_to_the_most_caught_up_follower_there():
    assert choose("b") == 2
    assert choose("b", followers={2: follower(12), 3: follower(18)}) == 3


def test_equal_followers_are_ordered_by_last_caught_up_time_then_id():
    assert choose(followers={2: follower(20, 500), 3: follower(20, 100)}) == 3
    assert choose(followers={2: follower(20, 100), 3: follower(20, 100)}) == 3


def test_the_leader_serves_without_selector_rack_or_match():
    assert choose(selector=None) == NO_PREFERRED_REPLICA
    assert choose(selector=LEADER_SELECTOR) == NO_PREFERRED_REPLICA
    assert choose(None) == NO_PREFERRED_REPLICA
    assert choose("") == NO_PREFERRED_REPLICA
    assert choose("elsewhere") == NO_PREFERRED_REPLICA
    # The leader's own rack: the leader, even with followers there too.
    assert choose("a", racks={1: "a", 2: "a", 3: "b"}) == NO_PREFERRED_REPLICA


def test_only_in_sync_reachable_followers_holding_the_offset_qualify():
    assert choose(isr=(1, 3)) == 3
    assert choose(isr=(1,)) == NO_PREFERRED_REPLICA
    # Follower 2 is not reachable on the consumer's listener (or fenced).
    assert choose(racks={1: "a", 3: "b"}) == 3
    # Offset 16 is beyond follower 3's LEO; 21 beyond both.
    assert choose(followers={2: follower(15), 3: follower(18)}, fetch_offset=16) == 3
    assert choose(fetch_offset=21) == NO_PREFERRED_REPLICA
    # Below the log start offset nobody holds it: the leader answers OFFSET_OUT_OF_RANGE.
    assert choose(fetch_offset=3, log_start=5) == NO_PREFERRED_REPLICA


def test_rack_aware_choice_returns_the_leader_view_itself():
    leader = ReplicaView(1, "a", 20, 0)
    assert rack_aware_choice("b", leader, []) is leader
    chosen = rack_aware_choice("b", leader, [ReplicaView(2, "b", 20, 0)])
    assert chosen.broker_id == 2


def test_replica_selector_class_accepts_kafkas_two_selectors_and_names_the_key_otherwise():
    base = {"process.roles": "broker", "node.id": "1",
            "controller.quorum.voters": "9@127.0.0.1:1", "listeners": "PLAINTEXT://127.0.0.1:0"}
    assert ServerConfig(base).replica_selector_class is None
    for name in SUPPORTED_SELECTORS:
        assert ServerConfig({**base, "replica.selector.class": name}).replica_selector_class == name
    with pytest.raises(ConfigError, match="replica.selector.class"):
        ServerConfig({**base, "replica.selector.class": "com.example.MySelector"})
