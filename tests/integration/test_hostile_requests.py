"""Requests no well-behaved client sends, as raw frames to one node started by the launcher:
each gets its Kafka answer, while another connection is answered within 2 s, the node's
resident memory stays under `RSS_BOUND_MB`, and records acknowledged before are all there
after."""

from __future__ import annotations

import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from cluster.launcher.processes import read_pid
from clients.consumer import BlockingConsumer
from clients.producer import BlockingProducer
from clients.protocol import ApiKey, ErrorCode, decode_response, encode_request
from tests.compat.cluster import HOST, Cluster, running_cluster, wait_for

pytestmark = pytest.mark.slow

# The second client's bound on an answer, and the node's resident memory bound, under every
# case here (the node idles at well under 100 MB).
ANSWER_BOUND_S = 2.0
RSS_BOUND_MB = 512
# Requests naming this many topics, partitions or resources.
MANY = 100_000
PRECIOUS = "precious"
PRECIOUS_VALUES = [f"value-{i}".encode() for i in range(60)]
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    overrides = {"auto.create.topics.enable": "true", "offsets.topic.num.partitions": "1"}
    with running_cluster(tmp_path_factory.mktemp("hostile"), nodes=1,
                         overrides=overrides) as started:
        started.create_topic(PRECIOUS, 3)
        with BlockingProducer({"bootstrap.servers": started.bootstrap, "acks": "all"}) as producer:
            futures = [producer.send(PRECIOUS, value, partition=i % 3)
                       for i, value in enumerate(PRECIOUS_VALUES)]
            producer.flush(30)
        assert all(f.succeeded() for f in futures)
        yield started


# -- raw frames ----------------------------------------------------------------------------

def _read_exact(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise EOFError("the node closed the connection")
        data += chunk
    return bytes(data)


def exchange(sock: socket.socket, frame: bytes) -> bytes:
    """Send one request frame, return the response frame."""
    sock.sendall(struct.pack(">i", len(frame)) + frame)
    size = struct.unpack(">i", _read_exact(sock, 4))[0]
    return _read_exact(sock, size)


def round_trip(sock: socket.socket, api_key: int, version: int, correlation_id: int,
               body: dict[str, Any]) -> dict[str, Any]:
    frame = encode_request(api_key, version, correlation_id, "hostile-test", body)
    answered, response = decode_response(api_key, version, exchange(sock, frame))
    assert answered == correlation_id
    return response


class Watch:
    """While a hostile request runs: another connection's ApiVersions round trips (the
    slowest one, a pending one included) and the node's peak VmRSS."""

    def __init__(self, port: int, pid: int) -> None:
        self.port, self.pid = port, pid
        self.slowest_s = 0.0
        self.peak_rss_mb = 0
        self.failure: str | None = None
        self._pending_since: float | None = None
        self.answered_once = threading.Event()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._probe, daemon=True),
                         threading.Thread(target=self._sample, daemon=True)]

    def __enter__(self) -> Watch:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._pending_since is not None:
            self.slowest_s = max(self.slowest_s, time.monotonic() - self._pending_since)
        self._stop.set()
        for thread in self._threads:
            thread.join(10)

    def rss_mb(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
        raise AssertionError("no VmRSS line")

    def _sample(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak_rss_mb = max(self.peak_rss_mb, self.rss_mb())
            except OSError:
                self.failure = "the node process is gone"
                return
            self._stop.wait(0.05)

    def _probe(self) -> None:
        try:
            with socket.create_connection((HOST, self.port), timeout=30) as sock:
                correlation_id = 0
                while not self._stop.is_set():
                    correlation_id += 1
                    started = self._pending_since = time.monotonic()
                    round_trip(sock, ApiKey.API_VERSIONS, 3, correlation_id,
                               {"client_software_name": "probe",
                                "client_software_version": "1"})
                    self._pending_since = None
                    self.answered_once.set()
                    self.slowest_s = max(self.slowest_s, time.monotonic() - started)
                    self._stop.wait(0.05)
        except (OSError, EOFError) as exc:
            self.failure = f"the second client's connection failed: {exc!r}"


def hostile(cluster: Cluster, api_key: int, version: int, body: dict[str, Any]
            ) -> dict[str, Any]:
    """Send `body` on a connection of its own while watching the node; check the bounds.
    The frames are built and read outside the watch, so that the test's own work does not
    slow the second client."""
    pid = read_pid(cluster.info.nodes[0])
    assert pid is not None
    frame = encode_request(api_key, version, 1, "hostile-test", body)
    with Watch(cluster.port, pid) as watch:
        # The second client is connected and answered before the hostile request goes.
        assert watch.answered_once.wait(30), watch.failure
        with socket.create_connection((HOST, cluster.port), timeout=60) as sock:
            answer = exchange(sock, frame)
    answered, response = decode_response(api_key, version, answer)
    assert answered == 1
    assert watch.failure is None, watch.failure
    assert watch.slowest_s < ANSWER_BOUND_S, (
        f"another client waited {watch.slowest_s:.2f} s for an answer")
    assert watch.peak_rss_mb < RSS_BOUND_MB, f"the node grew to {watch.peak_rss_mb} MB"
    return response


def create_topics_body(*topics: tuple[str, int, int], validate_only: bool = False
                       ) -> dict[str, Any]:
    return {"topics": [{"name": name, "num_partitions": partitions,
                        "replication_factor": replication, "assignments": [], "configs": []}
                       for name, partitions, replication in topics],
            "timeout_ms": 30_000, "validate_only": validate_only}


def codes(entries: list[dict[str, Any]]) -> set[tuple[int, str | None]]:
    return {(e["error_code"], e.get("error_message")) for e in entries}


# -- CreateTopics and CreatePartitions -------------------------------------------------------

def test_a_hundred_million_partitions_are_refused_at_once(cluster: Cluster) -> None:
    response = hostile(cluster, ApiKey.CREATE_TOPICS, 7,
                       create_topics_body(("huge", 100_000_000, 1)))
    assert codes(response["topics"]) == {(ErrorCode.POLICY_VIOLATION, TOO_MANY_PARTITIONS)}
    assert cluster.metadata(["huge"])["topics"][0]["error_code"] == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


def test_a_hundred_thousand_partitions_over_several_topics_are_refused(cluster: Cluster) -> None:
    names = [f"spread{i}" for i in range(10)]
    for validate_only in (True, False):
        response = hostile(cluster, ApiKey.CREATE_TOPICS, 7, create_topics_body(
            *((name, 10_000, 1) for name in names), validate_only=validate_only))
        assert [t["name"] for t in response["topics"]] == names
        assert codes(response["topics"]) == {(ErrorCode.POLICY_VIOLATION, TOO_MANY_PARTITIONS)}
    listed = cluster.metadata(names)["topics"]
    assert {t["error_code"] for t in listed} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_growing_a_topic_past_ten_thousand_partitions_is_refused(cluster: Cluster) -> None:
    cluster.create_topic("grow", 1)
    for count in (10_002, 100_000_000):
        response = hostile(cluster, ApiKey.CREATE_PARTITIONS, 3, {
            "topics": [{"name": "grow", "count": count, "assignments": None}],
            "timeout_ms": 30_000, "validate_only": False})
        assert codes(response["results"]) == {(ErrorCode.POLICY_VIOLATION, TOO_MANY_PARTITIONS)}
    assert len(cluster.metadata(["grow"])["topics"][0]["partitions"]) == 1


def test_a_replication_factor_above_the_live_brokers_is_refused(cluster: Cluster) -> None:
    response = hostile(cluster, ApiKey.CREATE_TOPICS, 7, create_topics_body(("wide", 1, 32767)))
    assert codes(response["topics"]) == {(
        ErrorCode.INVALID_REPLICATION_FACTOR,
        "Unable to replicate the partition 32767 time(s): The target replication factor of "
        "32767 cannot be reached because only 1 broker(s) are registered.")}


# -- requests naming very many topics or partitions ----------------------------------------

@pytest.mark.parametrize("auto_create", [False, True])
def test_metadata_for_a_hundred_thousand_missing_topics(cluster: Cluster,
                                                        auto_create: bool) -> None:
    names = [f"absent-{auto_create}-{i}" for i in range(MANY)]
    # v9 names topics only; a v12 request of 100,000 topic ids takes the node's connection
    # about twice as long to decode and answer, outside the handler.
    response = hostile(cluster, ApiKey.METADATA, 9, {
        "topics": [{"name": name} for name in names] + [{"name": PRECIOUS}] * 1000,
        "allow_auto_topic_creation": auto_create, "include_topic_authorized_operations": False})
    answered = {t["name"]: t for t in response["topics"]}
    assert len(response["topics"]) == MANY + 1  # a topic named 1,000 times is answered once
    assert len(answered[PRECIOUS]["partitions"]) == 3
    # With auto-creation the 100,000 topics would be one CreateTopics the controller
    # refuses as a whole (over 10,000 partitions): none is asked for, and none is created.
    assert {answered[n]["error_code"] for n in names} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert cluster.metadata([names[0], names[-1]])["topics"][0]["error_code"] == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


def test_list_offsets_for_a_hundred_thousand_partitions(cluster: Cluster) -> None:
    response = hostile(cluster, ApiKey.LIST_OFFSETS, 7, {
        "replica_id": -1, "isolation_level": 0, "topics": [{"name": PRECIOUS, "partitions": [
            {"partition_index": i, "current_leader_epoch": -1, "timestamp": -1}
            for i in range(MANY)]}]})
    partitions = response["topics"][0]["partitions"]
    assert len(partitions) == MANY
    assert sum(p["offset"] for p in partitions[:3]) == len(PRECIOUS_VALUES)
    assert {p["error_code"] for p in partitions[3:]} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_describe_configs_of_fifty_thousand_topics(cluster: Cluster) -> None:
    count = MANY // 2
    response = hostile(cluster, ApiKey.DESCRIBE_CONFIGS, 4, {
        "resources": [{"resource_type": 2, "resource_name": f"nothing{i}",
                       "configuration_keys": None} for i in range(count)] + [
            {"resource_type": 2, "resource_name": PRECIOUS, "configuration_keys": None}] * 2,
        "include_synonyms": True, "include_documentation": True})
    results = response["results"]
    assert {r["error_code"] for r in results[:count]} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    # A resource named twice would cost a full description per copy: refused, as Kafka's
    # config APIs refuse duplicates.
    assert codes(results[count:]) == {(ErrorCode.INVALID_REQUEST, "Duplicate resource.")}


def test_offset_fetch_for_a_hundred_thousand_partitions(cluster: Cluster) -> None:
    def coordinator_ready() -> bool:
        found = cluster.request(ApiKey.FIND_COORDINATOR, {"key": "hostile", "key_type": 0}, 3)
        return found["error_code"] == ErrorCode.NONE
    wait_for(coordinator_ready, "the group coordinator to load", 30)
    response = hostile(cluster, ApiKey.OFFSET_FETCH, 7, {
        "group_id": "hostile", "require_stable": False, "topics": [
            {"name": f"t{i % 1000}", "partition_indexes": list(range(i, i + 100))}
            for i in range(0, MANY, 100)]})
    assert response["error_code"] == ErrorCode.NONE
    partitions = [p for t in response["topics"] for p in t["partitions"]]
    assert len(partitions) == MANY
    assert {(p["error_code"], p["committed_offset"]) for p in partitions} == {(0, -1)}


def test_a_produce_naming_a_hundred_thousand_partitions(cluster: Cluster) -> None:
    response = hostile(cluster, ApiKey.PRODUCE, 7, {
        "acks": 1, "timeout_ms": 30_000, "transactional_id": None, "topic_data": [
            {"name": "no-such-topic", "partition_data": [{"index": p, "records": None}
                                                         for p in range(MANY)]}]})
    partitions = response["responses"][0]["partition_responses"]
    assert len(partitions) == MANY
    assert {p["error_code"] for p in partitions} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_a_request_naming_more_elements_than_the_bound_closes_its_connection(
        cluster: Cluster) -> None:
    # raftka.socket.request.max.elements (200,000): refused while it is decoded.
    frame = encode_request(ApiKey.METADATA, 9, 1, "hostile-test", {
        "topics": [{"name": f"too-many-{i}"} for i in range(250_000)],
        "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
    pid = read_pid(cluster.info.nodes[0])
    assert pid is not None
    with Watch(cluster.port, pid) as watch:
        assert watch.answered_once.wait(30), watch.failure
        with socket.create_connection((HOST, cluster.port), timeout=60) as sock:
            with pytest.raises((EOFError, ConnectionResetError)):
                exchange(sock, frame)
    assert watch.failure is None, watch.failure
    assert watch.slowest_s < ANSWER_BOUND_S
    assert watch.peak_rss_mb < RSS_BOUND_MB


# -- nothing acknowledged is lost ------------------------------------------------------------

def test_every_acknowledged_record_is_still_there(cluster: Cluster) -> None:
    with BlockingConsumer({"bootstrap.servers": cluster.bootstrap}) as consumer:
        consumer.assign([(PRECIOUS, p) for p in range(3)])
        consumer.seek_to_beginning()
        got: list[bytes | None] = []
        deadline = time.monotonic() + 30
        while len(got) < len(PRECIOUS_VALUES) and time.monotonic() < deadline:
            got += [record.value for record in consumer.poll(200)]
    assert sorted(got) == sorted(PRECIOUS_VALUES)  # type: ignore[type-var]
