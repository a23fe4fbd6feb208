"""Independent decoder sweep: every (API, version) a broker advertises in ApiVersions that
kafka-python's protocol classes know is sent with a minimal valid body built by
kafka-python, and the answer must decode with kafka-python at that version and carry the
request's correlation id. The data APIs name a real topic on its leader, so their answers
carry records, offsets and epochs at every version, not just empty lists."""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from tests.compat.cluster import HOST, Cluster
from tests.unit.clients.protocol.kafka_python_classes import build, kafka, message_classes

from kafka.record.memory_records import MemoryRecordsBuilder  # noqa: E402

TOPIC = "sweep"
METADATA_TOPIC = "__cluster_metadata"
TOPIC_RESOURCE = 2


def record_batch() -> bytes:
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    builder.append(int(time.time() * 1000), b"key", b"value", [("h", b"1")])
    builder.close()
    return bytes(builder.buffer())


def minimal_body(api_key: int, version: int) -> dict[str, Any]:
    """The smallest body that makes the broker do real work for this API."""
    partition0 = {"partition_index": 0}
    bodies: dict[int, dict[str, Any]] = {
        0: {"acks": 1, "timeout_ms": 5000, "topic_data": [
            {"name": TOPIC, "partition_data": [{"index": 0, "records": record_batch()}]}]},
        1: {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "session_epoch": -1, "topics": [{"topic": TOPIC, "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]},
        2: {"replica_id": -1, "topics": [{"name": TOPIC, "partitions": [
            {"partition_index": 0, "timestamp": -1 if version % 2 else -2}]}]},
        3: {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False},
        18: {"client_software_name": "sweep", "client_software_version": "1.0"},
        19: {"topics": [{"name": f"sweep-created-v{version}", "num_partitions": 1,
                         "replication_factor": 1}], "timeout_ms": 10_000},
        21: {"topics": [{"name": TOPIC, "partitions": [{**partition0, "offset": 0}]}],
             "timeout_ms": 5000},
        22: {"transactional_id": None, "transaction_timeout_ms": 60_000},
        23: {"replica_id": -1, "topics": [{"topic": TOPIC, "partitions": [
            {"partition": 0, "leader_epoch": 0}]}]},
        32: {"resources": [{"resource_type": TOPIC_RESOURCE, "resource_name": TOPIC,
                            "configuration_keys": None}]},
        44: {"resources": [{"resource_type": TOPIC_RESOURCE, "resource_name": TOPIC,
                            "configs": [{"name": "retention.ms", "config_operation": 0,
                                         "value": "604800000"}]}]},
        55: {"topics": [{"topic_name": METADATA_TOPIC, "partitions": [partition0]}]},
    }
    return bodies.get(api_key, {})


class Wire:
    """A raw socket speaking frames; no Raftka code on the client side."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection((HOST, port), timeout=10)

    def round_trip(self, request: Any, correlation_id: int) -> bytes:
        request.with_header(correlation_id=correlation_id, client_id="decoder-sweep")
        self.sock.sendall(request.encode(header=True, framed=True))
        (size,) = struct.unpack(">i", self._read(4))
        return self._read(size)

    def _read(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise EOFError(f"connection closed after {len(data)} of {size} bytes")
            data += chunk
        return bytes(data)

    def close(self) -> None:
        self.sock.close()


def advertised(wire: Wire, responses: dict[int, type]) -> dict[int, tuple[int, int]]:
    request = kafka.protocol.metadata.ApiVersionsRequest[0]()
    answer = responses[18][0].decode(wire.round_trip(request, 1), header=True)
    assert answer.error_code == 0
    return {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}


def test_every_advertised_version_decodes_with_kafka_python(cluster: Cluster) -> None:
    cluster.create_topic(TOPIC)
    requests, responses = message_classes()
    wire = Wire(cluster.port_of(cluster.leader_of(TOPIC)))
    try:
        versions = advertised(wire, responses)
        assert {0, 1, 2, 3, 18, 19, 20, 22, 32, 60} <= set(versions)
        correlation_id = 100
        checked: list[tuple[int, int]] = []
        failures: list[str] = []
        for api_key, (low, high) in sorted(versions.items()):
            if api_key not in requests or api_key not in responses:
                continue
            for version in range(low, min(high, requests[api_key].max_version) + 1):
                correlation_id += 1
                request = build(requests[api_key][version], minimal_body(api_key, version))
                try:
                    answer = responses[api_key][version].decode(
                        wire.round_trip(request, correlation_id), header=True)
                except Exception as exc:  # any decode failure is a finding, keep sweeping
                    failures.append(f"api {api_key} v{version}: {type(exc).__name__}: {exc}")
                    wire.close()
                    wire = Wire(cluster.port_of(cluster.leader_of(TOPIC)))
                    continue
                if answer.header.correlation_id != correlation_id:
                    failures.append(f"api {api_key} v{version}: correlation id "
                                    f"{answer.header.correlation_id} != {correlation_id}")
                checked.append((api_key, version))
        assert not failures, "\n".join(failures)
        assert len(checked) >= 60, checked
    finally:
        wire.close()


def test_data_apis_answer_without_errors_at_every_version(cluster: Cluster) -> None:
    """Produce, Fetch and ListOffsets on the leader succeed at each advertised version."""
    cluster.create_topic("sweep-data")
    requests, responses = message_classes()
    wire = Wire(cluster.port_of(cluster.leader_of("sweep-data")))
    correlation_id = 1000
    try:
        versions = advertised(wire, responses)
        for api_key in (0, 1, 2):
            low, high = versions[api_key]
            for version in range(low, min(high, requests[api_key].max_version) + 1):
                correlation_id += 1
                body = minimal_body(api_key, version)
                for entry in body.get("topic_data", []) + body.get("topics", []):
                    for key in ("name", "topic"):
                        if key in entry:
                            entry[key] = "sweep-data"
                answer = responses[api_key][version].decode(
                    wire.round_trip(build(requests[api_key][version], body), correlation_id),
                    header=True)
                topics = answer.responses if api_key in (0, 1) else answer.topics
                partitions = [p for t in topics for p in
                              (t.partition_responses if api_key == 0 else t.partitions)]
                assert [p.error_code for p in partitions] == [0], (api_key, version, answer)
                if api_key == 1:
                    assert partitions[0].records, (version, answer)
    finally:
        wire.close()
