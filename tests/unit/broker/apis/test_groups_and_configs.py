"""Group APIs' error answers (COORDINATOR_NOT_AVAILABLE wherever their clients look);
DescribeConfigs for topics (with the dynamic broker defaults they inherit) and the
broker."""

from __future__ import annotations

import pytest

from clients.protocol import SUPPORTED_VERSIONS, ApiKey, ErrorCode
from broker.apis.request import DecodedRequest, RequestContext
from metadata.records import BROKER_RESOURCE, ConfigRecord
from tests.unit.broker.apis.harness import BROKER_ID, running_broker


def group_request(api_key: int, version: int) -> dict:
    """A valid request body of `api_key` at `version`."""
    topics = [{"name": "t", "partition_indexes": [0]}]
    bodies = {
        ApiKey.FIND_COORDINATOR: {"coordinator_keys": ["g"]} if version >= 4 else {"key": "g"},
        ApiKey.JOIN_GROUP: {"group_id": "g", "session_timeout_ms": 10000, "member_id": "",
                            "protocol_type": "consumer",
                            "protocols": [{"name": "range", "metadata": b""}]},
        ApiKey.SYNC_GROUP: {"group_id": "g", "generation_id": 1, "member_id": "m", "assignments": []},
        ApiKey.HEARTBEAT: {"group_id": "g", "generation_id": 1, "member_id": "m"},
        ApiKey.LEAVE_GROUP: ({"group_id": "g", "members": [{"member_id": "m"}]} if version >= 3
                             else {"group_id": "g", "member_id": "m"}),
        ApiKey.LIST_GROUPS: {},
        ApiKey.DESCRIBE_GROUPS: {"groups": ["g"]},
        ApiKey.DELETE_GROUPS: {"groups_names": ["g"]},
        ApiKey.OFFSET_COMMIT: {"group_id": "g", "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "committed_offset": 5, "committed_metadata": None}]}]},
        ApiKey.OFFSET_FETCH: ({"groups": [{"group_id": "g", "topics": topics}]} if version >= 8
                              else {"group_id": "g", "topics": topics}),
    }
    return bodies[api_key]


GROUP_APIS = (ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT,
              ApiKey.LEAVE_GROUP, ApiKey.LIST_GROUPS, ApiKey.DESCRIBE_GROUPS, ApiKey.DELETE_GROUPS,
              ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH)


def _codes(value: object) -> list[int]:
    """Every error_code anywhere in a response body."""
    if isinstance(value, dict):
        found = [value["error_code"]] if "error_code" in value else []
        return found + [c for v in value.values() for c in _codes(v)]
    if isinstance(value, list):
        return [c for v in value for c in _codes(v)]
    return []


class RefuseGroups:
    """An authorization hook answering every group API with COORDINATOR_NOT_AVAILABLE."""

    def authorize(self, request: DecodedRequest, ctx: RequestContext) -> int:
        if request.api_key in GROUP_APIS:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return ErrorCode.NONE


async def test_every_group_api_version_answers_coordinator_not_available(tmp_path):
    async with running_broker(tmp_path, authorizer=RefuseGroups()) as broker:
        conn = await broker.connect()
        for api_key in GROUP_APIS:
            low, high = SUPPORTED_VERSIONS[api_key]
            for version in range(low, high + 1):
                response = await conn.request(api_key, group_request(api_key, version), version)
                if (api_key, version) in ((ApiKey.FIND_COORDINATOR, 4), (ApiKey.OFFSET_FETCH, 1),
                                          (ApiKey.OFFSET_FETCH, 8), (ApiKey.OFFSET_FETCH, 9)):
                    del response["error_code"]  # not in this version: decoded as its default
                codes = _codes(response)
                assert codes and set(codes) == {ErrorCode.COORDINATOR_NOT_AVAILABLE}, (api_key, version)
        await conn.aclose()


def _configs_by_name(result: dict) -> dict[str, dict]:
    return {c["name"]: c for c in result["configs"]}


async def test_describe_topic_configs_with_sources_and_synonyms(tmp_path):
    extra = {"log.retention.hours": "24"}
    async with running_broker(tmp_path, extra=extra) as broker:
        broker.create_topic("t", configs={"cleanup.policy": "compact"})
        conn = await broker.connect()
        body = {"resources": [{"resource_type": 2, "resource_name": "t", "configuration_keys": None},
                              {"resource_type": 2, "resource_name": "missing", "configuration_keys": None}],
                "include_synonyms": True, "include_documentation": True}
        found, missing = (await conn.request(ApiKey.DESCRIBE_CONFIGS, body, 4))["results"]
        assert missing["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        configs = _configs_by_name(found)
        assert configs["cleanup.policy"]["value"] == "compact"
        assert configs["cleanup.policy"]["config_source"] == 1
        assert configs["retention.ms"]["value"] == str(24 * 3_600_000)
        assert configs["retention.ms"]["config_source"] == 4
        synonyms = [(s["name"], s["source"]) for s in configs["retention.ms"]["synonyms"]]
        assert synonyms[0] == ("log.retention.hours", 4)
        assert ("log.retention.hours", 5) in synonyms
        assert configs["segment.bytes"]["config_source"] == 5
        assert configs["segment.bytes"]["value"] == "1073741824"
        assert configs["segment.bytes"]["config_type"] == 3
        assert configs["segment.bytes"]["documentation"]
        await conn.aclose()


async def test_describe_selected_keys_and_broker_configs(tmp_path):
    async with running_broker(tmp_path, extra={"num.partitions": "3"}) as broker:
        broker.create_topic("t")
        conn = await broker.connect()
        body = {"resources": [
            {"resource_type": 2, "resource_name": "t", "configuration_keys": ["retention.ms"]},
            {"resource_type": 4, "resource_name": str(BROKER_ID), "configuration_keys": None},
            {"resource_type": 4, "resource_name": "77", "configuration_keys": None}],
            "include_synonyms": False}
        topic, broker_result, other = (await conn.request(ApiKey.DESCRIBE_CONFIGS, body, 1))["results"]
        assert [c["name"] for c in topic["configs"]] == ["retention.ms"]
        configs = _configs_by_name(broker_result)
        assert configs["num.partitions"]["value"] == "3"
        assert configs["num.partitions"]["config_source"] == 4
        assert configs["default.replication.factor"]["config_source"] == 5
        assert other["error_code"] == ErrorCode.INVALID_REQUEST
        await conn.aclose()


async def test_describe_topic_configs_report_dynamic_broker_defaults(tmp_path):
    """A topic without an override shows the value this broker applies, with its source:
    this broker's dynamic config over the cluster-wide default over the static file."""
    async with running_broker(tmp_path, extra={"min.insync.replicas": "2",
                                               "log.retention.hours": "24"}) as broker:
        broker.create_topic("plain")
        broker.create_topic("own", configs={"min.insync.replicas": "1"})
        conn = await broker.connect()

        async def describe(topic: str) -> dict[str, dict]:
            body = {"resources": [{"resource_type": 2, "resource_name": topic,
                                   "configuration_keys": ["min.insync.replicas",
                                                          "retention.ms"]}],
                    "include_synonyms": True}
            (result,) = (await conn.request(ApiKey.DESCRIBE_CONFIGS, body, 4))["results"]
            return _configs_by_name(result)

        def brief(entry: dict) -> tuple:
            return (entry["value"], entry["config_source"],
                    [(s["name"], s["value"], s["source"]) for s in entry["synonyms"]])

        def alter(resource: str, key: str, value: str | None) -> None:
            broker.publish([ConfigRecord(resource_type=BROKER_RESOURCE, resource_name=resource,
                                         name=key, value=value)])

        alter("", "min.insync.replicas", "3")
        alter("", "log.retention.ms", "60000")
        alter("2", "min.insync.replicas", "5")  # another broker's: not reported here
        configs = await describe("plain")
        assert brief(configs["min.insync.replicas"]) == ("3", 3, [
            ("min.insync.replicas", "3", 3), ("min.insync.replicas", "2", 4),
            ("min.insync.replicas", "1", 5)])
        assert brief(configs["retention.ms"]) == ("60000", 3, [
            ("log.retention.ms", "60000", 3), ("log.retention.hours", "24", 4),
            ("log.retention.hours", "168", 5)])
        alter(str(BROKER_ID), "min.insync.replicas", "4")
        assert brief((await describe("plain"))["min.insync.replicas"])[:2] == ("4", 2)
        own = (await describe("own"))["min.insync.replicas"]
        assert brief(own)[:2] == ("1", 1) and own["synonyms"][1]["source"] == 2
        alter(str(BROKER_ID), "min.insync.replicas", None)
        alter("", "min.insync.replicas", None)
        assert brief((await describe("plain"))["min.insync.replicas"])[:2] == ("2", 4)
        await conn.aclose()


@pytest.mark.parametrize("api_key", [ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS,
                                     ApiKey.OFFSET_FOR_LEADER_EPOCH, ApiKey.DELETE_RECORDS,
                                     ApiKey.DESCRIBE_CONFIGS])
async def test_data_apis_are_advertised(tmp_path, api_key):
    async with running_broker(tmp_path) as broker:
        conn = await broker.connect()
        assert conn.broker_versions[api_key] == SUPPORTED_VERSIONS[api_key]
        await conn.aclose()
