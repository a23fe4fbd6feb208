"""Incremental fetch sessions (KIP-227) for follower fetches, on the leader.

A follower that opens a session (session epoch 0) names all its partitions once; later
fetches (epoch 1, 2, ...) name only the partitions whose fetch position changed and list the
ones dropped as forgotten. The leader still reads every partition of the session on each
fetch (a follower's unchanged fetch offset still counts as caught up), but answers only the
partitions with something new: records, an error, a diverging epoch, or a moved high
watermark, last stable offset or log start offset. An idle partition then costs no bytes and
no decoding on either side, so a follower of many quiet partitions (`__consumer_offsets`)
pays per round trip only for the partitions that move.

Sessions are granted to followers only; a consumer asking for one gets session id 0 (no
session), which Kafka's protocol allows a broker to answer whenever its cache declines.
Pure logic: no I/O, no clock.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Iterable

from clients.protocol import ErrorCode
from clients.protocol.messages.fetch import FetchRequestData

FetchTopic = FetchRequestData.FetchTopic
FetchPartition = FetchRequestData.FetchPartition

TopicPartition = tuple[str, int]

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
NO_SESSION = 0
_INT32_MAX = 2**31 - 1
# Kafka's max.incremental.fetch.session.cache.slots default.
DEFAULT_MAX_SESSIONS = 1000
# What a response entry told the follower last: high watermark, last stable offset, log start.
_Marks = tuple[int, int, int]


def next_epoch(epoch: int) -> int:
    """The epoch after `epoch`; it wraps to 1 (0 opens a session, -1 closes one)."""
    return 1 if epoch >= _INT32_MAX or epoch < 0 else epoch + 1


class FetchSession:
    """One follower's session: the fetch parameters of each partition and what the last
    response said about it."""

    __slots__ = ("session_id", "replica_id", "epoch", "partitions", "_marks")

    def __init__(self, session_id: int, replica_id: int) -> None:
        self.session_id = session_id
        self.replica_id = replica_id
        # The epoch the next fetch in this session must carry.
        self.epoch = next_epoch(INITIAL_EPOCH)
        self.partitions: dict[str, dict[int, FetchPartition]] = {}
        self._marks: dict[TopicPartition, _Marks] = {}

    def __len__(self) -> int:
        return sum(len(ps) for ps in self.partitions.values())

    def update(self, topics: Iterable[FetchTopic],
               forgotten: Iterable[FetchRequestData.ForgottenTopic] = ()) -> None:
        """Take the partitions a fetch named (added, or with new parameters) and drop the
        forgotten ones. A partition added anew is answered in full on the next response."""
        for topic in forgotten:
            name = topic.topic
            known = self.partitions.get(name)
            for index in topic.partitions:
                if known is not None:
                    known.pop(index, None)
                self._marks.pop((name, index), None)
            if known is not None and not known:
                del self.partitions[name]
        for topic in topics:
            name = topic.topic
            known = self.partitions.setdefault(name, {})
            for fp in topic.partitions:
                index = fp.partition
                if index not in known:
                    self._marks.pop((name, index), None)
                known[index] = fp

    def request_topics(self) -> list[FetchTopic]:
        """Every partition of the session, as a fetch request's `topics`."""
        return [FetchTopic(topic=name, partitions=list(ps.values()))
                for name, ps in self.partitions.items()]

    def answer(self, responses: list[dict[str, Any]], incremental: bool) -> list[dict[str, Any]]:
        """Remember what `responses` tell the follower; for an incremental fetch, keep only
        the entries that tell it something new (topics left empty are dropped)."""
        kept_topics: list[dict[str, Any]] = []
        for topic in responses:
            name = topic["topic"]
            kept = []
            for entry in topic["partitions"]:
                key = (name, entry["partition_index"])
                marks = (entry["high_watermark"], entry["last_stable_offset"],
                         entry["log_start_offset"])
                if (not incremental or entry["error_code"] != ErrorCode.NONE
                        or entry.get("records") or entry.get("diverging_epoch")
                        or self._marks.get(key) != marks):
                    kept.append(entry)
                if entry["error_code"] == ErrorCode.NONE:
                    self._marks[key] = marks
                else:
                    # Answered again in full once the error clears.
                    self._marks.pop(key, None)
            if kept or not incremental:
                kept_topics.append({"topic": name, "partitions": kept})
        return kept_topics


@dataclass
class FetchContext:
    """How one fetch request is served: its error (sessions only), the session it belongs
    to, the partitions to read, and whether the answer is incremental."""

    error_code: int = ErrorCode.NONE
    session: FetchSession | None = None
    topics: list[FetchTopic] = field(default_factory=list)
    incremental: bool = False

    @property
    def session_id(self) -> int:
        return NO_SESSION if self.session is None else self.session.session_id


class FetchSessionCache:
    """Sessions by id, the least recently used evicted beyond `max_sessions`."""

    def __init__(self, max_sessions: int = DEFAULT_MAX_SESSIONS,
                 rng: random.Random | None = None) -> None:
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()
        self._rng = rng or random.Random()

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def _create(self, replica_id: int) -> FetchSession | None:
        if self.max_sessions <= 0:
            return None
        while len(self._sessions) >= self.max_sessions:
            self._sessions.popitem(last=False)
        session_id = self._rng.randint(1, _INT32_MAX)
        while session_id in self._sessions:
            session_id = self._rng.randint(1, _INT32_MAX)
        session = self._sessions[session_id] = FetchSession(session_id, replica_id)
        return session

    def context(self, body: FetchRequestData, replica_id: int) -> FetchContext:
        """Kafka's FetchManager.newContext for one request `body` from `replica_id`
        (negative for a consumer)."""
        session_id = body.session_id
        epoch = body.session_epoch
        topics = body.topics
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != NO_SESSION:
                self._sessions.pop(session_id, None)
            session = self._create(replica_id) if (
                epoch == INITIAL_EPOCH and replica_id >= 0) else None
            if session is not None:
                session.update(topics)
            return FetchContext(session=session, topics=topics)
        session = self._sessions.get(session_id)
        if session is None or session.replica_id != replica_id:
            return FetchContext(error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if epoch != session.epoch:
            return FetchContext(error_code=ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        self._sessions.move_to_end(session_id)
        session.update(topics, body.forgotten_topics_data)
        session.epoch = next_epoch(epoch)
        return FetchContext(session=session, topics=session.request_topics(), incremental=True)
