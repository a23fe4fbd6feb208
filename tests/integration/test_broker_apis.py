"""The broker's APIs and error codes on a real cluster from the launcher (the code path of
scripts/bootstrap-quorum): Produce, Fetch, ListOffsets, Metadata, DescribeConfigs,
DeleteRecords, DescribeCluster, DescribeQuorum and topic deletion on disk."""

from __future__ import annotations

import select
import socket
import struct
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from cluster.launcher import stop_quorum
from clients.protocol import ApiKey, decode_response, encode_request
from clients.protocol.errors import ErrorCode
from clients.records.batch import encode_batch, iter_record_batches
from clients.records.header import parse_header
from clients.records.record import Record
from tests.compat.cluster import HOST, Cluster, running_cluster, wait_for
from tests.unit.broker.apis.batches import (
    batch,
    fetch_body,
    now_ms,
    only_partition,
    produce_body,
    values_of,
)

TOPIC_RESOURCE = 2
LOG_APPEND_TIME_FLAG = 0x08


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    # Short sessions so the last test sees a killed broker fenced quickly.
    overrides = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"}
    with running_cluster(tmp_path_factory.mktemp("broker-apis"), overrides=overrides) as started:
        yield started


def leader_port(cluster: Cluster, topic: str, partition: int = 0) -> int:
    return cluster.port_of(cluster.leader_of(topic, partition))


def follower_port(cluster: Cluster, topic: str) -> int:
    leader = cluster.leader_of(topic)
    return next(cluster.port_of(n.node_id) for n in cluster.info.brokers if n.node_id != leader)


def produce(cluster: Cluster, topic: str, records: bytes | None, port: int | None = None,
            partition: int = 0, version: int | None = None) -> dict[str, Any]:
    response = cluster.request(ApiKey.PRODUCE, produce_body(topic, records, partition=partition),
                               version=version, port=port or leader_port(cluster, topic))
    return only_partition(response)


def fetch(cluster: Cluster, topic: str, offset: int = 0, **kwargs: Any) -> dict[str, Any]:
    response = cluster.request(ApiKey.FETCH, fetch_body(topic, offset, **kwargs),
                               port=leader_port(cluster, topic), timeout=30)
    assert response["error_code"] == 0
    return only_partition(response, "responses", "partitions")


def list_offset(cluster: Cluster, topic: str, timestamp: int, version: int | None = None
                ) -> dict[str, Any]:
    response = cluster.request(ApiKey.LIST_OFFSETS, {
        "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "timestamp": timestamp, "current_leader_epoch": -1}]}]},
        version=version, port=leader_port(cluster, topic))
    return only_partition(response, "topics", "partitions")


def topic_configs(cluster: Cluster, topic: str, keys: list[str] | None = None
                  ) -> dict[str, dict[str, Any]]:
    response = cluster.request(ApiKey.DESCRIBE_CONFIGS, {"resources": [{
        "resource_type": TOPIC_RESOURCE, "resource_name": topic, "configuration_keys": keys}],
        "include_synonyms": True, "include_documentation": True})
    result = response["results"][0]
    assert result["error_code"] == 0, result
    return {entry["name"]: entry for entry in result["configs"]}


# --- Produce ---------------------------------------------------------------------------

def test_produce_to_a_follower_is_not_leader_or_follower(cluster: Cluster) -> None:
    cluster.create_topic("p-not-leader")
    entry = produce(cluster, "p-not-leader", batch(), port=follower_port(cluster, "p-not-leader"))
    assert entry["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_produce_to_unknown_topic_or_partition(cluster: Cluster) -> None:
    cluster.create_topic("p-unknown")
    assert produce(cluster, "p-absent-topic", batch(), port=cluster.port)["error_code"] == \
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert produce(cluster, "p-unknown", batch(), partition=7)["error_code"] == \
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_produce_with_a_bad_crc_is_corrupt_message(cluster: Cluster) -> None:
    cluster.create_topic("p-crc")
    data = bytearray(batch([b"a", b"b"]))
    data[-1] ^= 0xFF  # inside the CRC-covered records
    assert produce(cluster, "p-crc", bytes(data))["error_code"] == ErrorCode.CORRUPT_MESSAGE
    assert list_offset(cluster, "p-crc", -1)["offset"] == 0


def test_produce_beyond_max_message_bytes_is_message_too_large(cluster: Cluster) -> None:
    cluster.create_topic("p-large", configs={"max.message.bytes": "2048"})
    assert produce(cluster, "p-large", batch([b"x" * 4096]))["error_code"] == \
        ErrorCode.MESSAGE_TOO_LARGE
    assert produce(cluster, "p-large", batch([b"x" * 512]))["error_code"] == ErrorCode.NONE


def test_produce_outside_the_timestamp_bounds_is_invalid_timestamp(cluster: Cluster) -> None:
    cluster.create_topic("p-time", configs={"message.timestamp.before.max.ms": "60000",
                                            "message.timestamp.after.max.ms": "60000"})
    hour = 3_600_000
    assert produce(cluster, "p-time", batch(timestamp=now_ms() - hour))["error_code"] == \
        ErrorCode.INVALID_TIMESTAMP
    assert produce(cluster, "p-time", batch(timestamp=now_ms() + hour))["error_code"] == \
        ErrorCode.INVALID_TIMESTAMP
    assert produce(cluster, "p-time", batch())["error_code"] == ErrorCode.NONE


def test_produce_of_a_control_batch_is_invalid_record_for_the_whole_batch(cluster: Cluster) -> None:
    cluster.create_topic("p-invalid")
    control = encode_batch([Record(None, now_ms(), b"\x00\x00\x00\x00", b"")], is_control=True,
                           producer_id=5, producer_epoch=0, is_transactional=False)
    entry = produce(cluster, "p-invalid", control)
    assert entry["error_code"] == ErrorCode.INVALID_RECORD
    # The batch is refused as a whole: no record is singled out (Kafka's KIP-467 answer).
    assert entry["record_errors"] == [] and entry["error_message"]


def test_log_append_time_stamps_the_batch(cluster: Cluster) -> None:
    cluster.create_topic("p-append-time", configs={"message.timestamp.type": "LogAppendTime"})
    before = now_ms()
    entry = produce(cluster, "p-append-time", batch([b"a", b"b"], timestamp=12345))
    after = now_ms()
    assert entry["error_code"] == 0 and before <= entry["log_append_time_ms"] <= after
    records = bytes(fetch(cluster, "p-append-time")["records"])
    header = parse_header(records, 0)
    assert header.attributes & LOG_APPEND_TIME_FLAG
    assert header.max_timestamp == entry["log_append_time_ms"]
    assert [r.timestamp for b in iter_record_batches(records) for r in b.records] == \
        [entry["log_append_time_ms"]] * 2


def test_produce_acks_zero_sends_no_response_but_appends(cluster: Cluster) -> None:
    cluster.create_topic("p-acks0")
    with socket.create_connection((HOST, leader_port(cluster, "p-acks0")), timeout=10) as sock:
        for correlation_id, api_key, version, body in (
                (1, ApiKey.PRODUCE, 9, produce_body("p-acks0", batch([b"z"]), acks=0)),
                (2, ApiKey.API_VERSIONS, 0, {})):
            frame = encode_request(api_key, version, correlation_id, "acks0", body)
            sock.sendall(struct.pack(">i", len(frame)) + frame)
        (size,) = struct.unpack(">i", _read(sock, 4))
        correlation_id, _ = decode_response(ApiKey.API_VERSIONS, 0, _read(sock, size))
    assert correlation_id == 2  # the acks=0 produce was never answered
    wait_for(lambda: list_offset(cluster, "p-acks0", -1)["offset"] == 1, "the acks=0 append")


def test_idempotent_producer_duplicates_and_sequence_errors(cluster: Cluster) -> None:
    cluster.create_topic("p-idempotent")
    port = leader_port(cluster, "p-idempotent")
    init = cluster.request(ApiKey.INIT_PRODUCER_ID, {"transactional_id": None,
                                                     "transaction_timeout_ms": 60_000}, port=port)
    assert init["error_code"] == 0 and init["producer_id"] >= 0
    pid, epoch = init["producer_id"], init["producer_epoch"]

    def send(sequence: int, producer_epoch: int = epoch, values: int = 2) -> dict[str, Any]:
        data = batch([b"v%d" % i for i in range(values)], producer_id=pid,
                     producer_epoch=producer_epoch, base_sequence=sequence)
        return produce(cluster, "p-idempotent", data, port=port)

    first, second = send(0), send(2)
    assert (first["error_code"], first["base_offset"]) == (0, 0)
    assert (second["error_code"], second["base_offset"]) == (0, 2)
    duplicate = send(0)
    assert (duplicate["error_code"], duplicate["base_offset"]) == (0, 0)  # original offset
    assert send(9)["error_code"] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert send(0, producer_epoch=epoch + 1)["error_code"] == 0  # a bumped epoch restarts at 0
    assert send(4, producer_epoch=epoch)["error_code"] == ErrorCode.INVALID_PRODUCER_EPOCH
    assert list_offset(cluster, "p-idempotent", -1)["offset"] == 6


# --- Fetch -----------------------------------------------------------------------------

def test_fetch_long_poll_is_woken_by_an_append(cluster: Cluster) -> None:
    cluster.create_topic("f-long-poll")
    port = leader_port(cluster, "f-long-poll")
    frame = encode_request(ApiKey.FETCH, 12, 7, "long-poll",
                           fetch_body("f-long-poll", 0, max_wait_ms=20_000, min_bytes=1))
    with socket.create_connection((HOST, port), timeout=30) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        # Nothing to return yet: the fetch must be parked, not answered empty.
        assert select.select([sock], [], [], 0.5)[0] == []
        produced_at = time.monotonic()
        assert produce(cluster, "f-long-poll", batch([b"wake"]), port=port)["error_code"] == 0
        (size,) = struct.unpack(">i", _read(sock, 4))
        waited = time.monotonic() - produced_at
        correlation_id, response = decode_response(ApiKey.FETCH, 12, _read(sock, size))
    assert correlation_id == 7
    assert waited < 5, f"the fetch answered {waited:.1f} s after the append"
    assert values_of(only_partition(response, "responses", "partitions")["records"]) == \
        [(0, b"wake")]


def test_fetch_returns_at_least_one_batch_beyond_max_bytes(cluster: Cluster) -> None:
    cluster.create_topic("f-max-bytes")
    for i in range(3):
        produce(cluster, "f-max-bytes", batch([b"x" * 1000, b"y" * 1000]))
    one = fetch(cluster, "f-max-bytes", partition_max_bytes=10, max_bytes=10)
    batches = list(iter_record_batches(bytes(one["records"])))
    assert len(batches) == 1 and len(batches[0].records) == 2
    limited = fetch(cluster, "f-max-bytes", partition_max_bytes=2500)
    assert len(bytes(limited["records"])) <= 2500  # one whole batch and part of the next
    assert [offset for offset, _ in values_of(limited["records"])] == [0, 1]
    everything = fetch(cluster, "f-max-bytes")
    assert [offset for offset, _ in values_of(everything["records"])] == list(range(6))
    assert everything["high_watermark"] == 6 and everything["log_start_offset"] == 0
    assert everything["preferred_read_replica"] == -1


def test_fetch_out_of_range_and_log_start_after_delete_records(cluster: Cluster) -> None:
    cluster.create_topic("f-range")
    for _ in range(4):
        produce(cluster, "f-range", batch([b"a", b"b"]))
    assert fetch(cluster, "f-range", 100)["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
    deleted = cluster.request(ApiKey.DELETE_RECORDS, {"topics": [{"name": "f-range", "partitions": [
        {"partition_index": 0, "offset": 4}]}], "timeout_ms": 5000},
        port=leader_port(cluster, "f-range"))
    entry = deleted["topics"][0]["partitions"][0]
    assert (entry["error_code"], entry["low_watermark"]) == (0, 4)
    assert fetch(cluster, "f-range", 0)["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
    after = fetch(cluster, "f-range", 4)
    assert after["error_code"] == 0 and after["log_start_offset"] == 4
    assert list_offset(cluster, "f-range", -2)["offset"] == 4


def test_fetch_session_full_fetch_form(cluster: Cluster) -> None:
    """A sessionless full fetch (session id 0, epoch -1) answers with session id 0; a
    request to open a session (epoch 0) is still served as a full fetch."""
    cluster.create_topic("f-session")
    produce(cluster, "f-session", batch([b"s"]))
    for epoch in (-1, 0):
        body = fetch_body("f-session", 0)
        body["session_epoch"] = epoch
        response = cluster.request(ApiKey.FETCH, body, port=leader_port(cluster, "f-session"))
        assert response["error_code"] == 0
        assert only_partition(response, "responses", "partitions")["records"]


# --- ListOffsets -----------------------------------------------------------------------

def test_list_offsets_earliest_latest_by_timestamp_and_max_timestamp(cluster: Cluster) -> None:
    cluster.create_topic("o-list")
    base = now_ms() - 10_000
    for i in range(5):
        produce(cluster, "o-list", batch([b"r"], timestamp=base + i * 1000))
    assert list_offset(cluster, "o-list", -2)["offset"] == 0
    assert list_offset(cluster, "o-list", -1)["offset"] == 5
    found = list_offset(cluster, "o-list", base + 2500)
    assert (found["offset"], found["timestamp"]) == (3, base + 3000)
    assert list_offset(cluster, "o-list", base + 60_000)["offset"] == -1
    latest_ts = list_offset(cluster, "o-list", -3)
    assert (latest_ts["offset"], latest_ts["timestamp"]) == (4, base + 4000)
    old = list_offset(cluster, "o-list", -3, version=6)
    assert old["error_code"] == ErrorCode.UNSUPPORTED_VERSION
    assert list_offset(cluster, "o-list", -2, version=1)["offset"] == 0


# --- metadata, configs, cluster --------------------------------------------------------

def test_metadata_describes_brokers_controller_topic_ids_and_epochs(cluster: Cluster) -> None:
    cluster.create_topic("m-topic", partitions=3)
    response = cluster.metadata(["m-topic"])
    assert response["cluster_id"] == cluster.info.cluster_id
    assert response["controller_id"] in (1, 2, 3)
    assert sorted((b["node_id"], b["host"], b["port"]) for b in response["brokers"]) == \
        sorted((n.node_id, HOST, n.client_port) for n in cluster.info.brokers)
    (topic,) = response["topics"]
    assert topic["error_code"] == 0 and topic["topic_id"].int != 0
    for partition in topic["partitions"]:
        assert partition["leader_epoch"] >= 0 and partition["offline_replicas"] == []
        assert partition["replica_nodes"] == partition["isr_nodes"] == [partition["leader_id"]]


def test_metadata_auto_creates_only_when_allowed(cluster: Cluster) -> None:
    refused = cluster.metadata(["m-auto-refused"], allow_auto_create=False)["topics"][0]
    assert refused["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    def created() -> bool:
        topic = cluster.metadata(["m-auto"], allow_auto_create=True)["topics"][0]
        return topic["error_code"] == 0 and all(p["leader_id"] >= 0 for p in topic["partitions"])

    wait_for(created, "m-auto to be auto-created")
    assert "m-auto-refused" not in {t["name"] for t in cluster.metadata(None)["topics"]}


def test_describe_configs_has_kafka_names_sources_and_defaults(cluster: Cluster) -> None:
    cluster.create_topic("c-topic", configs={"retention.ms": "1000000"})
    configs = topic_configs(cluster, "c-topic")
    assert {"cleanup.policy", "retention.ms", "segment.bytes", "max.message.bytes",
            "min.insync.replicas", "message.timestamp.type"} <= set(configs)
    retention = configs["retention.ms"]
    assert (retention["value"], retention["config_source"]) == ("1000000", 1)  # DYNAMIC_TOPIC
    assert {(s["name"], s["value"], s["source"]) for s in retention["synonyms"]} >= {
        ("retention.ms", "1000000", 1), ("log.retention.hours", "168", 5)}
    cleanup = configs["cleanup.policy"]
    assert (cleanup["value"], cleanup["config_source"]) == ("delete", 5)  # DEFAULT_CONFIG
    only = topic_configs(cluster, "c-topic", ["segment.bytes"])
    assert list(only) == ["segment.bytes"] and only["segment.bytes"]["value"] == "1073741824"
    broker = cluster.request(ApiKey.DESCRIBE_CONFIGS, {"resources": [{
        "resource_type": 4, "resource_name": "1", "configuration_keys": ["num.partitions"]}]},
        port=cluster.port_of(1))["results"][0]
    assert broker["error_code"] == 0 and broker["configs"][0]["value"] == "1"
    missing = cluster.request(ApiKey.DESCRIBE_CONFIGS, {"resources": [{
        "resource_type": TOPIC_RESOURCE, "resource_name": "c-absent",
        "configuration_keys": None}]})["results"][0]
    assert missing["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_describe_cluster_and_describe_quorum_on_a_broker(cluster: Cluster) -> None:
    described = cluster.request(ApiKey.DESCRIBE_CLUSTER, {})
    assert described["error_code"] == 0 and described["cluster_id"] == cluster.info.cluster_id
    assert sorted(b["broker_id"] for b in described["brokers"]) == [1, 2, 3]
    quorum = cluster.request(ApiKey.DESCRIBE_QUORUM, {"topics": [{
        "topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]})
    partition = quorum["topics"][0]["partitions"][0]
    assert partition["error_code"] == 0 and partition["leader_id"] in (1, 2, 3)
    assert sorted(v["replica_id"] for v in partition["current_voters"]) == [1, 2, 3]


def test_topic_deletion_removes_the_partition_directories(cluster: Cluster) -> None:
    cluster.create_topic("d-gone", partitions=3)
    for partition in range(3):
        produce(cluster, "d-gone", batch([b"bye"]), partition=partition,
                port=leader_port(cluster, "d-gone", partition))

    def partition_dirs() -> list[Path]:
        return [d for node in cluster.info.brokers
                for d in cluster.data_dir(node.node_id).glob("d-gone-*")]

    assert len(partition_dirs()) == 3
    response = cluster.request(ApiKey.DELETE_TOPICS, {"topics": [{"name": "d-gone"}],
                                                      "topic_names": ["d-gone"],
                                                      "timeout_ms": 10_000})
    assert [r["error_code"] for r in response["responses"]] == [0]
    wait_for(lambda: not partition_dirs(), "the d-gone partition directories to be removed")


def test_metadata_shows_offline_replicas_of_a_dead_broker(cluster: Cluster) -> None:
    """Runs last in this module: it kills a broker for good."""
    cluster.create_topic("m-offline", partitions=3)
    victim = next(p["leader_id"] for p in cluster.metadata(["m-offline"])["topics"][0]["partitions"]
                  if p["leader_id"] != 1)
    stop_quorum(cluster.info.dir, node_id=victim, kill=True)

    def offline_partition() -> dict[str, Any] | None:
        response = cluster.metadata(["m-offline"], port=cluster.port_of(1))
        if victim in {b["node_id"] for b in response["brokers"]}:
            return None
        return next((p for p in response["topics"][0]["partitions"]
                     if p["replica_nodes"] == [victim] and p["leader_id"] == -1), None)

    partition = wait_for(offline_partition, f"broker {victim} to be fenced", timeout=30)
    assert partition["error_code"] == ErrorCode.LEADER_NOT_AVAILABLE
    assert partition["offline_replicas"] == [victim] and partition["leader_epoch"] >= 1


def _read(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError("connection closed")
        data += chunk
    return bytes(data)
