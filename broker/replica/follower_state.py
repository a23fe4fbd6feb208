"""What a partition leader knows about one follower: its LEO and when it was last caught up.

Kafka's Replica.updateFetchState, two rules for "caught up":
1. a fetch from at least the leader's current LEO means the follower is caught up now;
2. a fetch from at least the leader's LEO at the follower's *previous* fetch means it was
   caught up at that previous fetch (it has everything the leader had then).
A follower is in sync while its LEO equals the leader's or it was caught up within
`replica.lag.time.max.ms`.
"""

from __future__ import annotations

from dataclasses import dataclass

UNKNOWN_OFFSET = -1


@dataclass(slots=True)
class FollowerState:
    """One follower's position as its fetches reported it (all times in ms)."""

    log_end_offset: int = UNKNOWN_OFFSET
    last_caught_up_time_ms: int = 0
    last_fetch_time_ms: int = 0
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET

    @classmethod
    def initial(cls, in_isr: bool, now_ms: int) -> FollowerState:
        """A new leader's view: ISR members count as caught up now (Kafka does the same, so
        a fresh leader does not shrink the ISR before followers had a chance to fetch)."""
        return cls(last_caught_up_time_ms=now_ms if in_isr else 0)

    def update_fetch(self, fetch_offset: int, leader_end_offset: int, now_ms: int) -> None:
        """Record a fetch from `fetch_offset` while the leader's LEO was `leader_end_offset`."""
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset >= 0:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms,
                                              self.last_fetch_time_ms)
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_time_ms = now_ms

    def is_caught_up(self, leader_end_offset: int, now_ms: int, max_lag_ms: int) -> bool:
        return (self.log_end_offset == leader_end_offset
                or now_ms - self.last_caught_up_time_ms <= max_lag_ms)
