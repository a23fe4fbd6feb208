"""The leader's majority contact age: how long since enough voters answered to make a
majority with it."""

from __future__ import annotations

from kraft.status import PeerView, RaftView, build_status, majority_contact_age_ms


def view(contacts: list[float | None], *, is_leader: bool = True) -> RaftView:
    peers = tuple(PeerView(f"127.0.0.1:{9000 + i}", 5, at) for i, at in enumerate(contacts))
    return RaftView("127.0.0.1:8999", 4, 5, 5, 5, is_leader, is_leader, peers, ())


def test_the_age_is_that_of_the_newest_contact_a_majority_needs() -> None:
    now = 100.0
    # Three voters: one other voter makes a majority, the most recent one counts.
    assert majority_contact_age_ms(view([99.75, 97.0]), now) == 250
    # Five voters: two others are needed, so the second most recent counts.
    assert majority_contact_age_ms(view([99.75, 97.0, 98.5, None]), now) == 1500
    # Never heard from enough voters: no age at all.
    assert majority_contact_age_ms(view([None, None]), now) is None
    # A single voter is its own majority.
    assert majority_contact_age_ms(view([]), now) == 0


def test_only_the_leader_reports_it() -> None:
    addresses = {"127.0.0.1:8999": 1, "127.0.0.1:9000": 2, "127.0.0.1:9001": 3}
    leader = build_status(view([99.0, 90.0]), 1, True, addresses, 100.0)
    follower = build_status(view([99.0, 90.0], is_leader=False), 1, True, addresses, 100.0)
    assert leader.majority_contact_age_ms == 1000
    assert follower.majority_contact_age_ms is None
