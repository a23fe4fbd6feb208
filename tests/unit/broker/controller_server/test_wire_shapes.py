"""Controller answers encode in every supported version, with errors where Kafka puts them."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from broker.controller_server.describe_quorum import (
    CaughtUpTimes,
    ControllerEndpoint,
    describe_cluster_response,
    describe_quorum_response,
)
from broker.controller_server.quorum_controller import CONTROLLER_ERRORS
from clients.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    ErrorCode,
    as_message,
    decode_response,
    encode_response,
)
from clients.protocol.fit import fit_request
from kraft.status import QuorumStatus, ReplicaStatus

REQUESTS: dict[int, dict[str, Any]] = {
    ApiKey.CREATE_TOPICS: {"topics": [{"name": "a"}, {"name": "b"}]},
    # v6+ names topics in `topics`, earlier versions in `topic_names`.
    ApiKey.DELETE_TOPICS: {"topics": [{"name": "a", "topic_id": uuid.uuid4()}, {"name": "b"}],
                           "topic_names": ["a", "b"]},
    ApiKey.CREATE_PARTITIONS: {"topics": [{"name": "a", "count": 2}]},
    ApiKey.INCREMENTAL_ALTER_CONFIGS: {"resources": [
        {"resource_type": 2, "resource_name": "a"}, {"resource_type": 4, "resource_name": ""}]},
    ApiKey.ALTER_CONFIGS: {"resources": [
        {"resource_type": 2, "resource_name": "a"}, {"resource_type": 4, "resource_name": ""}]},
    ApiKey.ALTER_PARTITION: {"broker_id": 1, "broker_epoch": 5, "topics": []},
    ApiKey.BROKER_REGISTRATION: {"broker_id": 1},
    ApiKey.BROKER_HEARTBEAT: {"broker_id": 1, "broker_epoch": 5},
    ApiKey.ALLOCATE_PRODUCER_IDS: {"broker_id": 1, "broker_epoch": 5},
    ApiKey.CREATE_ACLS: {"creations": [{"resource_type": 2, "resource_name": "a"}]},
    ApiKey.DELETE_ACLS: {"filters": [{"resource_type_filter": 1}, {"resource_type_filter": 2}]},
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: {
        "deletions": [{"name": "a", "mechanism": 1}],
        "upsertions": [{"name": "b", "mechanism": 2}, {"name": "a", "mechanism": 2}]},
    ApiKey.UNREGISTER_BROKER: {"broker_id": 4},
    ApiKey.ALTER_CLIENT_QUOTAS: {"entries": [
        {"entity": [{"entity_type": "user", "entity_name": None}], "ops": []},
        {"entity": [{"entity_type": "client-id", "entity_name": "c"}], "ops": []}]},
    ApiKey.ELECT_LEADERS: {"election_type": 0, "topic_partitions": [
        {"topic": "a", "partitions": [0, 1]}]},
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: {"topics": [{"name": "a", "partitions": [
        {"partition_index": 0, "replicas": [1, 2]}, {"partition_index": 1, "replicas": None}]}]},
    ApiKey.LIST_PARTITION_REASSIGNMENTS: {"topics": None},
}
# Where each API carries a controller-wide error: per entry under this key, else top level.
PER_ENTRY = {ApiKey.CREATE_TOPICS: "topics", ApiKey.DELETE_TOPICS: "responses",
             ApiKey.CREATE_PARTITIONS: "results", ApiKey.INCREMENTAL_ALTER_CONFIGS: "responses",
             ApiKey.ALTER_CONFIGS: "responses",
             ApiKey.CREATE_ACLS: "results", ApiKey.DELETE_ACLS: "filter_results",
             ApiKey.ALTER_USER_SCRAM_CREDENTIALS: "results", ApiKey.ALTER_CLIENT_QUOTAS: "entries"}
ENTRY_COUNTS = {ApiKey.CREATE_TOPICS: 2, ApiKey.DELETE_TOPICS: 2, ApiKey.CREATE_PARTITIONS: 1,
                ApiKey.INCREMENTAL_ALTER_CONFIGS: 2, ApiKey.ALTER_CONFIGS: 2, ApiKey.CREATE_ACLS: 1, ApiKey.DELETE_ACLS: 2,
                ApiKey.ALTER_USER_SCRAM_CREDENTIALS: 2, ApiKey.ALTER_CLIENT_QUOTAS: 2}
ENDPOINTS = {n: ControllerEndpoint("CONTROLLER", "127.0.0.1", 9092 + n) for n in (1, 2, 3)}
METADATA_REQUEST = as_message(ApiKey.DESCRIBE_QUORUM, 2, {
    "topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]})


def round_trip(api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    frame = encode_response(api_key, version, 7, body)
    correlation_id, decoded = decode_response(api_key, version, frame)
    assert correlation_id == 7
    return decoded


def request_body(api_key: int, version: int) -> Any:
    """The request as the controller's handler reads it at `version`."""
    body = fit_request(api_key, version, REQUESTS[api_key])
    return as_message(api_key, version, body)


def versions(api_key: int) -> list[int]:
    low, high = SUPPORTED_VERSIONS[api_key]
    return list(range(low, high + 1))


@pytest.mark.parametrize("api_key", sorted(CONTROLLER_ERRORS), ids=lambda k: ApiKey(k).name)
def test_not_controller_answer_encodes_in_every_version(api_key: int) -> None:
    for version in versions(api_key):
        decoded = round_trip(api_key, version, CONTROLLER_ERRORS[api_key](
            request_body(api_key, version), version, ErrorCode.NOT_CONTROLLER))
        if api_key == ApiKey.ELECT_LEADERS:
            # Per partition in every version; at top level too from v1.
            (topic,) = decoded["replica_election_results"]
            assert [p["error_code"] for p in topic["partition_result"]] == [
                ErrorCode.NOT_CONTROLLER] * 2
            assert version == 0 or decoded["error_code"] == ErrorCode.NOT_CONTROLLER
        elif api_key == ApiKey.ALTER_PARTITION_REASSIGNMENTS:
            # At top level and on every partition named.
            (topic,) = decoded["responses"]
            assert [p["error_code"] for p in topic["partitions"]] == [
                ErrorCode.NOT_CONTROLLER] * 2
            assert decoded["error_code"] == ErrorCode.NOT_CONTROLLER
        elif api_key in PER_ENTRY:
            entries = decoded[PER_ENTRY[api_key]]
            assert len(entries) == ENTRY_COUNTS[api_key]
            assert all(e["error_code"] == ErrorCode.NOT_CONTROLLER for e in entries)
        else:
            assert decoded["error_code"] == ErrorCode.NOT_CONTROLLER


def leader_status() -> QuorumStatus:
    voters = (ReplicaStatus(1, 40, 0, 0), ReplicaStatus(2, 40, 0, 15), ReplicaStatus(3, 31, 9, 700))
    return QuorumStatus(node_id=1, is_voter=True, leader_id=1, epoch=4, high_watermark=40,
                        applied_offset=40, log_end_offset=40, is_leader=True, is_ready=True,
                        voters=voters, observers=(ReplicaStatus(100, 38, 2, 50),))


def test_describe_quorum_on_the_leader_in_every_version() -> None:
    status = leader_status()
    now_ms = 1_700_000_000_000
    caught_up = CaughtUpTimes()
    caught_up.observe(status, now_ms - 1000)
    for version in versions(ApiKey.DESCRIBE_QUORUM):
        body = describe_quorum_response(METADATA_REQUEST, version, status, now_ms, caught_up,
                                        ENDPOINTS)
        decoded = round_trip(ApiKey.DESCRIBE_QUORUM, version, body)
        partition = decoded["topics"][0]["partitions"][0]
        assert (partition["leader_id"], partition["leader_epoch"], partition["high_watermark"]) == (1, 4, 40)
        voters = {v["replica_id"]: v for v in partition["current_voters"]}
        assert {k: v["log_end_offset"] for k, v in voters.items()} == {1: 40, 2: 40, 3: 31}
        assert [o["replica_id"] for o in partition["observers"]] == [100]
        if version >= 1:
            assert voters[1]["last_fetch_timestamp"] == now_ms
            assert voters[2]["last_fetch_timestamp"] == now_ms - 15
            assert voters[2]["last_caught_up_timestamp"] == now_ms - 1000 - 15
            # Never seen caught up: unknown.
            assert voters[3]["last_caught_up_timestamp"] == -1
        if version >= 2:
            assert [n["node_id"] for n in decoded["nodes"]] == [1, 2, 3]


def test_describe_quorum_without_a_leader_is_not_leader_or_follower() -> None:
    status = QuorumStatus(node_id=2, is_voter=True, leader_id=None, epoch=3, high_watermark=10,
                          applied_offset=10, log_end_offset=12, is_leader=False, is_ready=False,
                          voters=(ReplicaStatus(2, 12, None, None),), observers=())
    for version in versions(ApiKey.DESCRIBE_QUORUM):
        body = describe_quorum_response(METADATA_REQUEST, version, status, 1, CaughtUpTimes(), {})
        partition = round_trip(ApiKey.DESCRIBE_QUORUM, version, body)["topics"][0]["partitions"][0]
        assert (partition["error_code"], partition["leader_id"]) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)


def test_describe_cluster_only_answers_for_controller_endpoints() -> None:
    def request(version: int, body: dict[str, Any]) -> Any:
        return as_message(ApiKey.DESCRIBE_CLUSTER, version, body)

    v0 = describe_cluster_response(request(0, {}), 0, cluster_id="c", leader_id=2,
                                   endpoints=ENDPOINTS)
    assert round_trip(ApiKey.DESCRIBE_CLUSTER, 0, v0)["error_code"] == ErrorCode.INVALID_REQUEST
    unknown = describe_cluster_response(request(1, {"endpoint_type": 9}), 1, cluster_id="c",
                                        leader_id=2, endpoints=ENDPOINTS)
    assert unknown.error_code == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
    ok = round_trip(ApiKey.DESCRIBE_CLUSTER, 1, describe_cluster_response(
        request(1, {"endpoint_type": 2}), 1, cluster_id="c", leader_id=None,
        endpoints=ENDPOINTS))
    assert (ok["error_code"], ok["controller_id"], ok["endpoint_type"]) == (0, -1, 2)
    assert [(b["broker_id"], b["port"]) for b in ok["brokers"]] == [(1, 9093), (2, 9094), (3, 9095)]
