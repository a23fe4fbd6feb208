"""An in-memory produce sink on our own network server: the baseline of `scripts/bench`.

It answers ApiVersions, Metadata and Produce (acks 0 and 1) from memory: every requested
topic exists with `partitions` partitions led by this node, a produced batch is acknowledged
with offsets counted from its header, and the bytes are dropped. Set against Raftka's
produce figure, it shows what the client itself reaches through the same network layer and
codec, so the difference is the cost of the log, replica and handler code.

Run it as `python -m scripts.benchmarks.memory_broker [--host H] [--port P] [--partitions N]`:
it prints `listening on HOST:PORT` on stdout once bound, and stops when stdin closes.
"""

from __future__ import annotations

import argparse
import logging
import sys
import uuid
from typing import Any, Sequence

import trio

from broker.config.endpoints import Listener
from broker.apis.api_versions import install_api_versions
from broker.apis.request import DecodedRequest, RequestContext, RequestRouter
from broker.network import NetworkServer, ServerSettings
from clients.protocol import ApiKey, ErrorCode
from clients.protocol.messages.produce import ProduceRequestData
from clients.records.errors import CorruptRecordError
from clients.records.header import parse_header

logger = logging.getLogger(__name__)

NODE_ID = 0
CLUSTER_ID = "in-memory-bench-broker"


class MemoryBroker:
    """Counts offsets per partition and discards the records; one node, leader of all."""

    def __init__(self, partitions: int = 1) -> None:
        self.partitions = partitions
        self.address: tuple[str, int] = ("127.0.0.1", 0)
        self.next_offsets: dict[tuple[str, int], int] = {}
        self._topics: dict[str, uuid.UUID] = {}

    def install(self, router: RequestRouter) -> None:
        """Register Metadata, Produce, Fetch and ApiVersions advertising just those."""
        router.register(ApiKey.METADATA, self.handle_metadata)
        router.register(ApiKey.PRODUCE, self.handle_produce)
        # librdkafka writes RecordBatch v2 only to brokers that also advertise Fetch v4+;
        # without it, it falls back to the old MessageSet format.
        router.register(ApiKey.FETCH, self.handle_fetch)
        install_api_versions(router)

    async def handle_metadata(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        requested = request.body.topics
        names = (list(self._topics) if requested is None
                 else [t.name for t in requested if t.name])
        host, port = self.address
        return {"throttle_time_ms": 0,
                "brokers": [{"node_id": NODE_ID, "host": host, "port": port, "rack": None}],
                "cluster_id": CLUSTER_ID, "controller_id": NODE_ID,
                "topics": [self._describe(name) for name in names]}

    def _describe(self, name: str) -> dict[str, Any]:
        topic_id = self._topics.setdefault(name, uuid.uuid5(uuid.NAMESPACE_URL, name))
        return {"error_code": ErrorCode.NONE, "name": name, "topic_id": topic_id,
                "is_internal": False,
                "partitions": [{"error_code": ErrorCode.NONE, "partition_index": p,
                                "leader_id": NODE_ID, "leader_epoch": 0,
                                "replica_nodes": [NODE_ID], "isr_nodes": [NODE_ID],
                                "offline_replicas": []} for p in range(self.partitions)]}

    async def handle_fetch(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        """No records, ever: the high watermark is the count of offsets handed out."""
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": 0,
                "responses": [{"topic": t.topic, "partitions": [
                    {"partition_index": p.partition, "error_code": ErrorCode.NONE,
                     "high_watermark": self.next_offsets.get((t.topic, p.partition), 0),
                     "last_stable_offset": -1, "log_start_offset": 0, "records": b""}
                    for p in t.partitions]}
                    for t in request.body.topics]}

    async def handle_produce(self, request: DecodedRequest,
                             ctx: RequestContext) -> dict | None:
        body: ProduceRequestData = request.body
        responses = []
        for topic in body.topic_data:
            name = topic.name
            entries = [self._append(name, data) for data in topic.partition_data]
            responses.append({"name": name, "partition_responses": entries})
        if body.acks == 0:
            return None
        return {"responses": responses, "throttle_time_ms": 0}

    def _append(self, topic: str,
                data: ProduceRequestData.PartitionProduceData) -> dict[str, Any]:
        index = data.index
        entry: dict[str, Any] = {"index": index, "error_code": ErrorCode.NONE,
                                 "base_offset": -1, "log_append_time_ms": -1,
                                 "log_start_offset": 0}
        records = data.records
        if index >= self.partitions:
            entry["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            return entry
        try:
            header = parse_header(records, 0)
        except (CorruptRecordError, TypeError, ValueError) as exc:
            logger.debug("produce to %s-%d: unreadable batch: %r", topic, index, exc)
            entry["error_code"] = ErrorCode.CORRUPT_MESSAGE
            return entry
        key = (topic, index)
        base = self.next_offsets.get(key, 0)
        self.next_offsets[key] = base + header.last_offset_delta + 1
        entry["base_offset"] = base
        return entry


async def serve(host: str, port: int, partitions: int, *,
                task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED
                ) -> None:
    """Serve until cancelled; reports the bound (host, port) through `task_status`."""
    broker = MemoryBroker(partitions)
    router = RequestRouter()
    broker.install(router)
    server = NetworkServer([Listener("PLAINTEXT", host, port, "PLAINTEXT")], router,
                           ServerSettings())
    async with trio.open_nursery() as nursery:
        addresses = await nursery.start(server.serve)
        broker.address = (host, addresses["PLAINTEXT"][1])
        task_status.started(broker.address)


async def _main(host: str, port: int, partitions: int) -> None:
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(serve, host, port, partitions)
        print(f"listening on {bound[0]}:{bound[1]}", flush=True)  # the caller's handshake
        stdin = trio.wrap_file(sys.stdin)
        while await stdin.read(4096):
            pass
        nursery.cancel_scope.cancel()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m scripts.benchmarks.memory_broker")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--verbose", action="store_true", help="log at DEBUG level")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING)
    trio.run(_main, args.host, args.port, args.partitions)


if __name__ == "__main__":
    main()
