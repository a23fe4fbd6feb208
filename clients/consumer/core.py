"""The consumer's I/O-free logic, shared by the trio and the blocking consumer.

It keeps the assignment, each partition's position, pending offset resets and the records
fetched but not yet returned; it builds Fetch and ListOffsets requests per leader and
applies their answers. The drivers move bytes and keep time.

Fetching runs one answer ahead of the application: a partition is fetched again while it
holds at most one fetched answer (decoded or not), from where that answer ends, so the
broker reads the next records while the client decodes and hands out the last ones. Answers
are kept as received and decoded when ``drain`` reaches them. At most one Fetch per broker is
in flight, as in Kafka's fetcher.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from clients.common.cluster import ClusterMetadata
from clients.consumer.config import ConsumerConfig
from clients.consumer.group.protocol import TopicPartition
from clients.consumer.read_replicas import ReadReplicas
from clients.consumer.records import (
    ConsumerRecord,
    fetched_next_offset,
    parse_fetched_records,
)
from clients.protocol import ErrorCode, KafkaError
from clients.records.errors import RecordsError

logger = logging.getLogger(__name__)

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
_RESET_TIMESTAMPS = {"earliest": EARLIEST_TIMESTAMP, "latest": LATEST_TIMESTAMP}

_METADATA_ERRORS = frozenset({
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.OFFSET_NOT_AVAILABLE,
})


class NoOffsetForPartitionError(KafkaError):
    """A partition has no position and ``auto.offset.reset`` is ``none``."""


@dataclass
class _Fetched:
    """Records fetched for one partition, returned by ``drain`` from ``records[start]`` on
    (a list and an index: ``drain`` takes slices, not one record at a time)."""

    records: list[ConsumerRecord]
    next_offset: int
    start: int = 0

    @property
    def pending(self) -> int:
        return len(self.records) - self.start


@dataclass
class _Completed:
    """One partition's part of a Fetch answer, not decoded yet; its batches run from
    ``fetch_offset`` to ``next_offset`` (read from the batch headers)."""

    fetch_offset: int
    data: dict[str, Any]
    next_offset: int

# A partition is fetched again while it holds fewer fetched answers than this.
_ANSWERS_AHEAD = 2


class ConsumerCore:
    """Assignment, positions, resets and fetched-record buffers."""

    def __init__(self, config: ConsumerConfig) -> None:
        self.config = config
        self.cluster = ClusterMetadata()
        self.needs_metadata = False
        self.metadata_fetched_ms: float | None = None
        self._assignment: list[TopicPartition] = []
        self._positions: dict[TopicPartition, int | None] = {}
        self._resets: dict[TopicPartition, int] = {}
        # Assigned partitions whose position waits on the group's committed offset (assign()
        # with group.id): neither fetched nor reset by policy until it is known.
        self._awaiting_committed: set[TopicPartition] = set()
        self._fetched: dict[TopicPartition, _Fetched] = {}
        # Answers received after the one being drained, in offset order, not decoded yet.
        self._completed: dict[TopicPartition, list[_Completed]] = {}
        # Brokers with a Fetch in flight: no second one goes to them until it ends.
        self._fetching: set[int] = set()
        self._errors: list[Exception] = []
        # Paused partitions are neither fetched nor drained (their buffer waits).
        self._paused: set[TopicPartition] = set()
        # Partitions a leader sent to a closer replica (KIP-392, with client.rack).
        self.read_replicas = ReadReplicas(config.metadata_max_age_ms)

    # ---- assignment and positions ----

    @property
    def assignment(self) -> list[TopicPartition]:
        return list(self._assignment)

    @property
    def topics(self) -> set[str]:
        return {t for t, _ in self._assignment}

    def assign(self, partitions: Iterable[TopicPartition], *, committed_first: bool = False) -> None:
        """Consume ``partitions``; new ones start at the committed offset (looked up by the
        caller, see :meth:`apply_committed`) with ``committed_first``, else by policy."""
        wanted = list(dict.fromkeys((str(t), int(p)) for t, p in partitions))
        kept = set(wanted)
        for tp in list(self._positions):
            if tp not in kept:
                self._positions.pop(tp, None)
                self._resets.pop(tp, None)
                self._drop_buffers(tp)
                self._awaiting_committed.discard(tp)
        for tp in wanted:
            if tp not in self._positions:
                self._positions[tp] = None
                if committed_first:
                    self._awaiting_committed.add(tp)
                else:
                    self._reset_by_policy(tp)
        self._assignment = wanted
        self._paused &= kept
        if wanted:
            self.needs_metadata = True

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop fetching and returning records of ``partitions`` until ``resume``."""
        wanted = [(str(t), int(p)) for t, p in partitions]
        for tp in wanted:
            self._check_assigned(tp)
        self._paused.update(wanted)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        wanted = [(str(t), int(p)) for t, p in partitions]
        for tp in wanted:
            self._check_assigned(tp)
        self._paused.difference_update(wanted)

    @property
    def paused(self) -> list[TopicPartition]:
        return [tp for tp in self._assignment if tp in self._paused]

    def _check_assigned(self, tp: TopicPartition) -> None:
        if tp not in self._positions:
            raise ValueError(f"partition {tp[0]}-{tp[1]} is not assigned to this consumer")

    def _reset_by_policy(self, tp: TopicPartition) -> None:
        timestamp = _RESET_TIMESTAMPS.get(self.config.auto_offset_reset)
        if timestamp is None:
            self._resets.pop(tp, None)
        else:
            self._resets[tp] = timestamp

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._check_assigned(tp)
        if offset < 0:
            raise ValueError(f"seek offset must not be negative, got {offset}")
        self._positions[tp] = offset
        self._resets.pop(tp, None)
        self._drop_buffers(tp)
        self._awaiting_committed.discard(tp)

    def _drop_buffers(self, tp: TopicPartition) -> None:
        self._fetched.pop(tp, None)
        self._completed.pop(tp, None)

    @property
    def awaiting_committed(self) -> list[TopicPartition]:
        """Assigned partitions whose committed offset is still to be looked up."""
        return [tp for tp in self._assignment if tp in self._awaiting_committed]

    def apply_committed(self, committed: Mapping[TopicPartition, int | None]) -> None:
        """Start the awaiting partitions at their committed offsets; those with none (or a
        negative one) reset by ``auto.offset.reset``."""
        for tp, offset in committed.items():
            if tp not in self._awaiting_committed:
                continue  # sought or unassigned meanwhile
            self._awaiting_committed.discard(tp)
            if offset is not None and offset >= 0:
                self.seek(tp, offset)
            else:
                self._reset_by_policy(tp)

    def request_reset(self, partitions: Iterable[TopicPartition] | None,
                      timestamp: int) -> None:
        """Have ``partitions`` (all assigned when None) move to earliest/latest."""
        for tp in self._assignment if partitions is None else partitions:
            self._check_assigned(tp)
            self._positions[tp] = None
            self._resets[tp] = timestamp
            self._drop_buffers(tp)
            self._awaiting_committed.discard(tp)

    def position(self, tp: TopicPartition) -> int | None:
        """The offset of the next record ``drain`` returns; None while a reset is pending."""
        self._check_assigned(tp)
        fetched = self._fetched.get(tp)
        if fetched is not None:
            return fetched.records[fetched.start].offset if fetched.pending \
                else fetched.next_offset
        return self._positions[tp]

    def missing_positions(self) -> list[TopicPartition]:
        """Partitions with no position; raises NoOffsetForPartitionError when no reset."""
        missing = [tp for tp in self._assignment if self._positions.get(tp) is None]
        stuck = [tp for tp in missing if tp not in self._resets and tp not in self._awaiting_committed]
        if stuck:
            names = ", ".join(f"{t}-{p}" for t, p in stuck)
            raise NoOffsetForPartitionError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"no offset for partitions {names} and auto.offset.reset is none")
        return missing

    # ---- metadata ----

    def apply_metadata(self, response: dict[str, Any], now: float) -> None:
        self.cluster = self.cluster.merged_with(ClusterMetadata.from_response(response))
        self.metadata_fetched_ms = now
        self.needs_metadata = any(self.cluster.leader_for(*tp) is None
                                  for tp in self._assignment)

    def metadata_due(self, now: float) -> bool:
        if not self._assignment:
            return False
        if self.needs_metadata or self.metadata_fetched_ms is None:
            return True
        return now - self.metadata_fetched_ms >= self.config.metadata_max_age_ms

    # ---- ListOffsets ----

    def list_offsets_requests(self) -> dict[int, dict[str, Any]]:
        """ListOffsets bodies by leader for every partition with a pending reset."""
        by_node: dict[int, dict[str, list[dict[str, Any]]]] = {}
        for tp, timestamp in self._resets.items():
            if self._positions.get(tp) is not None:
                continue
            leader = self.cluster.leader_for(*tp)
            if leader is None:
                self.needs_metadata = True
                continue
            by_node.setdefault(leader.node_id, {}).setdefault(tp[0], []).append(
                {"partition_index": tp[1], "timestamp": timestamp})
        return {node: {"replica_id": -1, "isolation_level": self.config.isolation_level,
                       "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
                for node, topics in by_node.items()}

    def handle_list_offsets(self, response: dict[str, Any]) -> None:
        for topic in response.get("topics", ()):
            for p in topic["partitions"]:
                tp = (topic["name"], p["partition_index"])
                if tp not in self._resets or self._positions.get(tp) is not None:
                    continue
                code = ErrorCode.from_code(p["error_code"])
                if code == ErrorCode.NONE and p["offset"] >= 0:
                    self._positions[tp] = p["offset"]
                    del self._resets[tp]
                elif code in _METADATA_ERRORS or code.retriable:
                    self.needs_metadata = True
                else:
                    self._errors.append(KafkaError(code, f"ListOffsets for {tp[0]}-{tp[1]}"))

    # ---- Fetch ----

    def _fetch_offset(self, tp: TopicPartition) -> int | None:
        """Where the next Fetch of ``tp`` starts: after its last fetched answer."""
        completed = self._completed.get(tp)
        if completed:
            return completed[-1].next_offset
        fetched = self._fetched.get(tp)
        if fetched is not None:
            return fetched.next_offset
        return self._positions.get(tp)

    def _answers_held(self, tp: TopicPartition) -> int:
        return len(self._completed.get(tp, ())) + (tp in self._fetched)

    @property
    def fetching(self) -> bool:
        """Whether a Fetch is in flight."""
        return bool(self._fetching)

    def fetch_requests(self, max_wait_ms: int) -> dict[int, dict[str, Any]]:
        """Fetch bodies by broker (the leader, or the replica it prefers), for brokers with
        no Fetch in flight, of the partitions with a position that hold fewer than two
        fetched answers; the brokers count as fetching until :meth:`fetch_finished`."""
        by_node: dict[int, dict[str, list[dict[str, Any]]]] = {}
        for tp in self._assignment:
            position = self._fetch_offset(tp)
            if position is None or tp in self._paused \
                    or self._answers_held(tp) >= _ANSWERS_AHEAD:
                continue
            leader = self.cluster.leader_for(*tp)
            if leader is None:
                self.needs_metadata = True
                continue
            node_id = self.read_replicas.node_for(tp, leader.node_id, self.cluster.brokers)
            if node_id in self._fetching:
                continue
            by_node.setdefault(node_id, {}).setdefault(tp[0], []).append({
                "partition": tp[1], "fetch_offset": position,
                "partition_max_bytes": self.config.max_partition_fetch_bytes})
        self._fetching.update(by_node)
        return {node: {
            "replica_id": -1, "max_wait_ms": max_wait_ms,
            "min_bytes": self.config.fetch_min_bytes, "max_bytes": self.config.fetch_max_bytes,
            "isolation_level": self.config.isolation_level, "session_id": 0,
            "session_epoch": -1, "rack_id": self.config.client_rack,
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
        } for node, topics in by_node.items()}

    def fetch_finished(self, node_id: int) -> None:
        """The Fetch to ``node_id`` ended (answered or failed)."""
        self._fetching.discard(node_id)

    def handle_fetch(self, request: dict[str, Any], response: dict[str, Any]) -> bool:
        """Keep the records of a Fetch answer; answers for moved positions are dropped.
        Whether any partition got records (or moved on past control batches)."""
        sent = {(t["topic"], p["partition"]): p["fetch_offset"]
                for t in request["topics"] for p in t["partitions"]}
        top_error = ErrorCode.from_code(response.get("error_code", 0))
        if top_error != ErrorCode.NONE:
            self.needs_metadata = self.needs_metadata or top_error.retriable
            if not top_error.retriable:
                self._errors.append(KafkaError(top_error, "Fetch failed"))
            return False
        progressed = False
        for topic in response.get("responses", ()):
            for p in topic["partitions"]:
                tp = (topic["topic"], p["partition_index"])
                fetch_offset = sent.get(tp)
                if fetch_offset is None or tp not in self._positions \
                        or self._fetch_offset(tp) != fetch_offset:
                    continue
                if self._keep_answer(tp, fetch_offset, p):
                    progressed = True
                elif self._answers_held(tp) == 0:
                    try:
                        self._apply_partition(tp, fetch_offset, p)
                    except RecordsError as exc:
                        self._errors.append(exc)
                elif ErrorCode.from_code(p["error_code"]) in _METADATA_ERRORS:
                    # An answer ahead with an error waits: the partition is fetched again
                    # from there once the records before it are handed out.
                    self.needs_metadata = True
        return progressed

    def _keep_answer(self, tp: TopicPartition, fetch_offset: int, p: dict[str, Any]) -> bool:
        """Queue an answer with complete batches, undecoded; False for anything else."""
        if p["error_code"] != 0:
            return False
        try:
            next_offset = fetched_next_offset(p.get("records"), fetch_offset)
        except RecordsError:
            return False      # decoded at once, to raise the error
        if next_offset <= fetch_offset:
            return False
        self._completed.setdefault(tp, []).append(_Completed(fetch_offset, p, next_offset))
        return True

    def _apply_partition(self, tp: TopicPartition, fetch_offset: int,
                         p: dict[str, Any]) -> None:
        code = ErrorCode.from_code(p["error_code"])
        if code == ErrorCode.NONE:
            self.read_replicas.update(tp, p.get("preferred_read_replica", -1))
            # read_committed drops aborted transactions' batches here, as Kafka's fetcher.
            aborted = (p.get("aborted_transactions") or ()) if self.config.isolation_level \
                else None
            parsed = parse_fetched_records(tp[0], tp[1], p.get("records"), fetch_offset,
                                           verify_crc=self.config.check_crcs, aborted=aborted)
            if parsed.next_offset > fetch_offset:
                self._fetched[tp] = _Fetched(parsed.records, parsed.next_offset)
            elif parsed.truncated:
                logger.warning("fetch of %s-%d at %d returned only a partial batch; "
                               "max.partition.fetch.bytes (%d) may be too small",
                               tp[0], tp[1], fetch_offset,
                               self.config.max_partition_fetch_bytes)
        elif self.read_replicas.clear(tp):
            # The replica the leader preferred failed (OFFSET_OUT_OF_RANGE included: it may
            # lag): fetch from the leader again before resetting anything, as Kafka does.
            logger.debug("fetch of %s-%d from its preferred replica answered %s", *tp, code.name)
            if code != ErrorCode.OFFSET_OUT_OF_RANGE and (code in _METADATA_ERRORS
                                                          or code.retriable):
                self.needs_metadata = True
        elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
            logger.info("offset %d out of range for %s-%d", fetch_offset, *tp)
            self._positions[tp] = None
            self._reset_by_policy(tp)
            if tp not in self._resets:
                self._errors.append(KafkaError(
                    code, f"offset {fetch_offset} is out of range for {tp[0]}-{tp[1]} "
                          "and auto.offset.reset is none"))
        elif code in _METADATA_ERRORS or code.retriable:
            self.needs_metadata = True
        else:
            self._errors.append(KafkaError(code, f"Fetch of {tp[0]}-{tp[1]}"))

    # ---- returning records ----

    def add_error(self, error: Exception) -> None:
        """An error for the next ``poll`` to raise."""
        self._errors.append(error)

    def raise_errors(self) -> None:
        if self._errors:
            error = self._errors.pop(0)
            raise error

    def has_buffered(self) -> bool:
        """Whether ``drain`` has records to return (paused partitions' do not count)."""
        return any(tp not in self._paused for tp in self._fetched) or \
            any(tp not in self._paused for tp in self._completed)

    def _decode_next(self, tp: TopicPartition) -> _Fetched | None:
        """Decode the next received answer of ``tp`` into its buffer (None when none has
        records); answers of control batches only move the position."""
        queue = self._completed.get(tp)
        while queue:
            completed = queue.pop(0)
            if not queue:
                del self._completed[tp]
            if completed.fetch_offset != self._positions.get(tp):
                continue
            p = completed.data
            aborted = (p.get("aborted_transactions") or ()) if self.config.isolation_level \
                else None
            parsed = parse_fetched_records(tp[0], tp[1], p.get("records"),
                                           completed.fetch_offset,
                                           verify_crc=self.config.check_crcs, aborted=aborted)
            if parsed.records:
                fetched = self._fetched[tp] = _Fetched(parsed.records, parsed.next_offset)
                return fetched
            self._positions[tp] = parsed.next_offset
        return None

    def drain(self, max_records: int) -> list[ConsumerRecord]:
        """Up to ``max_records`` buffered records, partition by partition, advancing
        positions."""
        out: list[ConsumerRecord] = []
        for tp in list(dict.fromkeys([*self._fetched, *self._completed])):
            if tp in self._paused:
                continue
            while len(out) < max_records:
                fetched = self._fetched.get(tp) or self._decode_next(tp)
                if fetched is None:
                    break
                records, start = fetched.records, fetched.start
                end = min(start + max_records - len(out), len(records))
                if not out and start == 0 and end == len(records):
                    out = records          # the whole fetch: no copy
                else:
                    out += records[start:end]
                fetched.start = end
                if end < len(records):
                    self._positions[tp] = records[end].offset
                    break
                self._positions[tp] = fetched.next_offset
                del self._fetched[tp]
            if len(out) >= max_records:
                break
        return out
