"""Stub brokers (the real codec over real sockets) holding partitions in memory.

Produce stamps offsets with the broker's own batch-header code and appends the bytes;
Fetch returns whole batches from the one holding the fetch offset, cut at the partition's
byte limit (so the last batch may be partial, as a real broker may send it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import trio

from clients.protocol import ApiKey, ErrorCode, Request
from clients.records.header import assign_offsets, iter_batches, parse_header
from tests.unit.clients.stub_broker import StubBroker

TopicPartition = tuple[str, int]


@dataclass
class PartitionState:
    leader: int
    batches: list[tuple[int, bytes]] = field(default_factory=list)  # (base offset, bytes)
    next_offset: int = 0


@dataclass
class StubCluster:
    """Brokers 1..n on random ports; ``partitions[(topic, p)]`` says who leads what."""

    partitions: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    brokers: dict[int, StubBroker] = field(default_factory=dict)
    produce_errors: list[int] = field(default_factory=list)  # popped per partition result
    metadata_requests: int = 0
    on_produce: Callable[[int, Request], None] | None = None
    # Idempotence: producer ids handed out, and (producer id, epoch, last sequence) per
    # partition, checked as a broker does (a gap is OUT_OF_ORDER_SEQUENCE_NUMBER).
    next_producer_id: int = 1000
    sequences: dict[tuple[TopicPartition, int], tuple[int, int]] = field(default_factory=dict)

    async def start(self, nursery: trio.Nursery, broker_count: int) -> StubCluster:
        for node_id in range(1, broker_count + 1):
            handlers = {
                ApiKey.METADATA: self._metadata,
                ApiKey.PRODUCE: lambda r, n=node_id: self._produce(n, r),
                ApiKey.FETCH: lambda r, n=node_id: self._fetch(n, r),
                ApiKey.LIST_OFFSETS: lambda r, n=node_id: self._list_offsets(n, r),
                ApiKey.INIT_PRODUCER_ID: self._init_producer_id,
            }
            self.brokers[node_id] = await StubBroker(handlers).start(nursery)
        return self

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{b.port}" for b in self.brokers.values())

    def add_topic(self, topic: str, leaders: list[int]) -> None:
        for p, leader in enumerate(leaders):
            self.partitions[(topic, p)] = PartitionState(leader)

    def append(self, topic: str, partition: int, batch: bytes) -> None:
        state = self.partitions[(topic, partition)]
        buf = bytearray(batch)
        info = assign_offsets(buf, state.next_offset, 0)
        state.batches.append((state.next_offset, bytes(buf)))
        state.next_offset = info.last_offset + 1

    def log(self, topic: str, partition: int) -> bytes:
        return b"".join(b for _, b in self.partitions[(topic, partition)].batches)

    def _metadata(self, request: Request) -> dict[str, Any]:
        self.metadata_requests += 1
        wanted = request.body.topics
        names = sorted({t for t, _ in self.partitions}) if wanted is None \
            else [t.name for t in wanted]
        topics = []
        for name in names:
            parts = sorted(p for t, p in self.partitions if t == name)
            if not parts:
                topics.append({"name": name, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               "partitions": []})
                continue
            topics.append({"name": name, "error_code": 0, "partitions": [{
                "error_code": 0, "partition_index": p,
                "leader_id": self.partitions[(name, p)].leader, "leader_epoch": 0,
                "replica_nodes": [self.partitions[(name, p)].leader],
                "isr_nodes": [self.partitions[(name, p)].leader]} for p in parts]})
        return {"brokers": [{"node_id": n, "host": "127.0.0.1", "port": b.port}
                            for n, b in self.brokers.items()],
                "cluster_id": "stub", "controller_id": 1, "topics": topics}

    def _produce(self, node_id: int, request: Request) -> dict[str, Any] | None:
        if self.on_produce is not None:
            self.on_produce(node_id, request)
        responses = []
        for topic in request.body.topic_data:
            results = []
            for p in topic.partition_data:
                tp = (topic.name, p.index)
                state = self.partitions.get(tp)
                code = self.produce_errors.pop(0) if self.produce_errors else 0
                if state is None:
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif state.leader != node_id:
                    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                if code == 0:
                    code = self._check_sequence(tp, bytes(p.records))
                base = -1
                if code == 0:
                    base = state.next_offset
                    self.append(*tp, bytes(p.records))
                results.append({"index": p.index, "error_code": code, "base_offset": base})
            responses.append({"name": topic.name, "partition_responses": results})
        if request.body.acks == 0:
            return None
        return {"responses": responses}

    def _init_producer_id(self, request: Request) -> dict[str, Any]:
        self.next_producer_id += 1
        return {"error_code": 0, "producer_id": self.next_producer_id, "producer_epoch": 0}

    def _check_sequence(self, tp: TopicPartition, batch: bytes) -> int:
        header = parse_header(batch)
        if header.producer_id < 0:
            return 0
        key = (tp, header.producer_id)
        epoch, last = self.sequences.get(key, (header.producer_epoch, -1))
        if header.producer_epoch < epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if header.producer_epoch > epoch:
            last = -1
        if header.base_sequence != last + 1:
            return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        self.sequences[key] = (header.producer_epoch, header.last_sequence)
        return 0

    def _fetch(self, node_id: int, request: Request) -> dict[str, Any]:
        responses = []
        for topic in request.body.topics:
            parts = []
            for p in topic.partitions:
                state = self.partitions.get((topic.topic, p.partition))
                if state is None or state.leader != node_id:
                    parts.append({"partition_index": p.partition,
                                  "error_code": ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                  "high_watermark": -1, "records": None})
                    continue
                offset = p.fetch_offset
                if offset > state.next_offset:
                    parts.append({"partition_index": p.partition,
                                  "error_code": ErrorCode.OFFSET_OUT_OF_RANGE,
                                  "high_watermark": state.next_offset, "records": None})
                    continue
                data = b"".join(b for base, b in state.batches
                                if _last_offset(b) >= offset)
                parts.append({"partition_index": p.partition, "error_code": 0,
                              "high_watermark": state.next_offset,
                              "records": data[:p.partition_max_bytes]})
            responses.append({"topic": topic.topic, "partitions": parts})
        return {"responses": responses}

    def _list_offsets(self, node_id: int, request: Request) -> dict[str, Any]:
        topics = []
        for topic in request.body.topics:
            parts = []
            for p in topic.partitions:
                state = self.partitions[(topic.name, p.partition_index)]
                offset = 0 if p.timestamp == -2 else state.next_offset
                parts.append({"partition_index": p.partition_index, "error_code": 0,
                              "timestamp": -1, "offset": offset})
            topics.append({"name": topic.name, "partitions": parts})
        return {"topics": topics}


def _last_offset(batch: bytes) -> int:
    ((_, header),) = list(iter_batches(batch, verify_crc=False))
    return header.last_offset
