"""Shared by the fault tests: node addresses, the skip-or-fail rule for root-only tools,
and direct Produce / Fetch / Metadata requests to one chosen node."""

from __future__ import annotations

import os
import socket
import struct
from pathlib import Path
from typing import Any

import pytest

from cluster.launcher.ports import configured_port_range
from cluster.testing.network_partition import NetworkPartitioner, PartitionToolError
from cluster.testing.waiting import wait_for
from clients.net import KafkaConnectionError
from clients.net.blocking_connection import BlockingKafkaConnection
from clients.protocol import ApiKey, KafkaError, decode_response, encode_request
from clients.protocol.errors import ErrorCode
from metadata.topic_names import METADATA_TOPIC
from tests.unit.broker.apis.batches import (batch, fetch_body, only_partition, produce_body,
    values_of)


def node_hosts(count: int = 3) -> list[str]:
    """One loopback address per node, in a /24 named after the test port range, so runs
    with different ranges never share addresses (and so never share partition rules)."""
    block = configured_port_range()[0] // 1000 % 256
    return [f"127.0.{block}.{11 + i}" for i in range(count)]


def unavailable(reason: str) -> None:
    """Skip with `reason`; under CI=true a missing fault tool is a failure instead."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and {reason}")
    pytest.skip(reason)


def partitioner() -> NetworkPartitioner:
    try:
        return NetworkPartitioner()
    except PartitionToolError as exc:
        unavailable(str(exc))
        raise AssertionError("unreachable")


def request(host: str, port: int, api_key: int, body: dict[str, Any],
            timeout: float = 5.0) -> dict[str, Any] | None:
    """One request on a fresh connection; None when the node does not answer in time."""
    try:
        with BlockingKafkaConnection(host, port, client_id="fault-test", timeout=timeout) as conn:
            return conn.request(api_key, body)
    except (KafkaConnectionError, OSError, KafkaError):
        return None


def produce(host: str, port: int, topic: str, value: bytes, acks: int = -1,
            timeout_ms: int = 3000) -> dict[str, Any] | None:
    """Produce one record; the partition's answer, or None without one."""
    response = request(host, port, ApiKey.PRODUCE,
                       produce_body(topic, batch([value]), acks=acks, timeout_ms=timeout_ms),
                       timeout=timeout_ms / 1000 + 5)
    return None if response is None else only_partition(response)


def read_values(host: str, port: int, topic: str) -> list[bytes] | None:
    """Every record value of partition 0 a client can read from `host` (up to the HW)."""
    response = request(host, port, ApiKey.FETCH, fetch_body(topic, 0))
    if response is None:
        return None
    part = only_partition(response, "responses", "partitions")
    if part["error_code"] != 0:
        return None
    return [value for _, value in values_of(part["records"] or b"")]  # type: ignore[misc]


def partition_state(host: str, port: int, topic: str) -> tuple[int, int, tuple[int, ...]] | None:
    """(leader, leader epoch, ISR) of partition 0 as `host` reports it."""
    response = request(host, port, ApiKey.METADATA, {
        "topics": [{"name": topic}], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})
    if response is None or not response["topics"] or response["topics"][0]["error_code"]:
        return None
    part = response["topics"][0]["partitions"][0]
    return part["leader_id"], part.get("leader_epoch", -1), tuple(part["isr_nodes"])


def cluster_view(host: str, port: int, topic: str) -> dict[str, Any] | None:
    """Metadata from `host`: controller id, listed (unfenced) brokers, and partition 0's
    (leader, leader epoch, ISR)."""
    response = request(host, port, ApiKey.METADATA, {
        "topics": [{"name": topic}], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})
    if response is None or not response["topics"] or response["topics"][0]["error_code"]:
        return None
    part = response["topics"][0]["partitions"][0]
    return {"controller": response.get("controller_id", -1),
            "brokers": {b["node_id"] for b in response["brokers"]},
            "leader": part["leader_id"], "epoch": part.get("leader_epoch", -1),
            "isr": tuple(part["isr_nodes"])}


def log_values(data_dir: Path, topic: str, partition: int = 0) -> list[bytes]:
    """Every record value in a replica's segment files, in offset order (read from disk, so
    a follower's log can be checked too)."""
    values: list[bytes] = []
    for segment in sorted((data_dir / f"{topic}-{partition}").glob("*.log")):
        values += [value for _, value in values_of(segment.read_bytes())]  # type: ignore[misc]
    return values


def quorum_view(host: str, port: int) -> tuple[int, int] | None:
    """(leader id, leader epoch) of the metadata quorum as `host`'s DescribeQuorum says."""
    response = request(host, port, ApiKey.DESCRIBE_QUORUM, {"topics": [{
        "topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]})
    if response is None or response.get("error_code", 0):
        return None
    part = response["topics"][0]["partitions"][0]
    if part.get("error_code", 0):
        return None
    return part["leader_id"], part["leader_epoch"]


def create_topic(host: str, port: int, topic: str, timeout_ms: int = 3000) -> int | None:
    """One CreateTopics attempt (1 partition, RF 1) through `host`; its error code, or None
    without an answer."""
    response = request(host, port, ApiKey.CREATE_TOPICS, {
        "topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1,
                    "assignments": [], "configs": []}],
        "timeout_ms": timeout_ms, "validate_only": False}, timeout=timeout_ms / 1000 + 5)
    return None if response is None else response["topics"][0]["error_code"]


def topic_names(host: str, port: int) -> set[str] | None:
    response = request(host, port, ApiKey.METADATA, {
        "topics": None, "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})
    return None if response is None else {t["name"] for t in response["topics"]}


class QueuedRequest:
    """A request written to a node that may be paused: the bytes wait in the kernel until
    the node reads them; `answer` reads the response once it comes."""

    def __init__(self, host: str, port: int, api_key: int, version: int,
                 body: dict[str, Any]) -> None:
        self.api_key, self.version = api_key, version
        self._sock = socket.create_connection((host, port), timeout=5)
        frame = encode_request(api_key, version, 1, "fault-test", body)
        self._sock.sendall(struct.pack(">i", len(frame)) + frame)

    def answer(self, timeout: float = 20.0) -> dict[str, Any] | None:
        """The decoded response, or None when the node closes or says nothing in time."""
        self._sock.settimeout(timeout)
        try:
            size = struct.unpack(">i", self._read(4))[0]
            _, response = decode_response(self.api_key, self.version, self._read(size))
        except (OSError, EOFError):
            return None
        finally:
            self._sock.close()
        return response

    def _read(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self._sock.recv(size - len(data))
            if not chunk:
                raise EOFError("closed")
            data += chunk
        return data


# Refusals that mean nothing was appended, which a client retries (the leader's metadata
# may lag the controller's decision by a moment).
NOT_APPENDED = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_ENOUGH_REPLICAS,
                ErrorCode.LEADER_NOT_AVAILABLE}


def produce_acknowledged(host: str, port: int, topic: str, value: bytes,
                         timeout: float = 15.0) -> dict[str, Any]:
    """Produce one record with acks=all, retrying refusals that appended nothing; the
    answer, which the caller checks is an acknowledgement."""
    last: list[dict[str, Any] | None] = [None]

    def attempt() -> dict[str, Any] | None:
        answer = produce(host, port, topic, value)
        last[0] = answer
        if answer is not None and answer["error_code"] in NOT_APPENDED:
            return None
        return answer or None
    try:
        return wait_for(attempt, f"an answer to a produce to {topic} at {host}:{port}", timeout)
    except TimeoutError:
        raise AssertionError(f"produce to {topic} at {host}:{port}: last answer {last[0]}")
