"""The follower's half of an incremental fetch session (KIP-227; Kafka's
FetchSessionHandler): which partitions each fetch must name, and the session id and epoch
it carries.

The first fetch to a leader opens a session (epoch 0) and names every partition. Once the
leader granted one, each fetch names only the partitions that are new or whose fetch
parameters changed (in steady state: the ones that just appended), and lists as forgotten
the ones no longer fetched. Any session error, a leader that declined to open a session, or
a lost connection starts over with a full fetch. Pure logic, no I/O.
"""

from __future__ import annotations

from typing import Any

from broker.replica.fetch_session import INITIAL_EPOCH, NO_SESSION, next_epoch

TopicPartition = tuple[str, int]


class FetchRequestPlan:
    """What one fetch sends: session id and epoch, the partitions to name, the forgotten."""

    __slots__ = ("session_id", "session_epoch", "named", "forgotten", "wanted")

    def __init__(self, session_id: int, session_epoch: int,
                 named: dict[TopicPartition, dict[str, Any]],
                 forgotten: list[TopicPartition],
                 wanted: dict[TopicPartition, dict[str, Any]]) -> None:
        self.session_id = session_id
        self.session_epoch = session_epoch
        self.named = named
        self.forgotten = forgotten
        # The whole session after this fetch (what the leader will hold if it succeeds).
        self.wanted = wanted

    def topics(self) -> list[dict[str, Any]]:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, _), fields in self.named.items():
            by_topic.setdefault(topic, []).append(fields)
        return [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]

    def forgotten_topics(self) -> list[dict[str, Any]]:
        by_topic: dict[str, list[int]] = {}
        for topic, index in self.forgotten:
            by_topic.setdefault(topic, []).append(index)
        return [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]


class FollowerFetchSession:
    """One fetcher's session with its leader."""

    def __init__(self) -> None:
        self.session_id = NO_SESSION
        self.epoch = INITIAL_EPOCH
        # Partition -> the fetch parameters the leader holds for it in this session.
        self._held: dict[TopicPartition, dict[str, Any]] = {}

    def plan(self, wanted: dict[TopicPartition, dict[str, Any]]) -> FetchRequestPlan:
        """The next fetch for `wanted` (every partition to fetch now, with its parameters)."""
        if self.session_id == NO_SESSION:
            return FetchRequestPlan(NO_SESSION, INITIAL_EPOCH, dict(wanted), [], wanted)
        held = self._held
        named = {key: fields for key, fields in wanted.items() if held.get(key) != fields}
        forgotten = [key for key in held if key not in wanted]
        return FetchRequestPlan(self.session_id, self.epoch, named, forgotten, wanted)

    def answered(self, plan: FetchRequestPlan, error_code: int, session_id: int) -> None:
        """The leader answered `plan` with a top-level `error_code` and `session_id`."""
        if error_code:
            self.reset()
            return
        if plan.session_id == NO_SESSION:
            self.session_id = session_id
            self.epoch = next_epoch(INITIAL_EPOCH)
        else:
            self.epoch = next_epoch(self.epoch)
        self._held = dict(plan.wanted) if self.session_id != NO_SESSION else {}

    def reset(self) -> None:
        """Start over with a full fetch (a session error or a new connection)."""
        self.session_id = NO_SESSION
        self.epoch = INITIAL_EPOCH
        self._held = {}
