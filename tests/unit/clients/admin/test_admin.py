"""Admin request/response mapping against a stub broker, and the CLI's pure formatting."""

from __future__ import annotations

import uuid

import pytest
import trio

from clients.cli.api_versions import api_lines
from clients.cli.topics import _non_default_configs, describe_lines, parse_configs, topic_id_text
from clients.admin import Admin, BlockingAdmin, NewTopic, PartitionInfo, TopicDescription
from clients.admin.operations import ConfigEntry
from clients.protocol import ApiKey, ErrorCode, KafkaError, Request
from tests.unit.clients.stub_broker import StubBroker
from tests.unit.clients.net.test_blocking_connection import in_thread

TOPIC_ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


class AdminStub:
    def __init__(self) -> None:
        self.broker: StubBroker | None = None
        self.create_error = 0

    async def start(self, nursery: trio.Nursery) -> StubBroker:
        self.broker = await StubBroker({
            ApiKey.METADATA: self.metadata,
            ApiKey.CREATE_TOPICS: self.create_topics,
            ApiKey.DELETE_TOPICS: self.delete_topics,
            ApiKey.CREATE_PARTITIONS: lambda r: {"results": [
                {"name": t.name, "error_code": ErrorCode.INVALID_PARTITIONS,
                 "error_message": "Topic currently has 3 partitions, which is higher than "
                                  "the requested 2."} for t in r.body.topics]},
            ApiKey.DESCRIBE_CONFIGS: lambda r: {"results": [{
                "error_code": 0, "error_message": None, "resource_type": 2,
                "resource_name": "t", "configs": [
                    {"name": "retention.ms", "value": "1000", "read_only": False,
                     "config_source": 1, "is_sensitive": False},
                    {"name": "segment.bytes", "value": "1073741824", "read_only": False,
                     "config_source": 5, "is_sensitive": False}]}]},
            ApiKey.INCREMENTAL_ALTER_CONFIGS: lambda r: {"responses": [{
                "error_code": 0, "error_message": None, "resource_type": 2,
                "resource_name": "t"}]},
            ApiKey.DESCRIBE_CLUSTER: lambda r: {
                "cluster_id": "cid", "controller_id": 1, "error_code": 0,
                "brokers": [{"broker_id": 1, "host": "127.0.0.1", "port": self.broker.port,
                             "rack": "r1"}]},
        }).start(nursery)
        return self.broker

    def metadata(self, request: Request) -> dict:
        assert self.broker is not None
        topics = [{"name": "t", "error_code": 0, "topic_id": TOPIC_ID, "partitions": [
            {"error_code": 0, "partition_index": p, "leader_id": 1, "replica_nodes": [1],
             "isr_nodes": [1]} for p in (1, 0)]},
                  {"name": "__consumer_offsets", "error_code": 0, "is_internal": True,
                   "partitions": []}]
        wanted = request.body.topics
        if wanted is not None:
            names = [t.name for t in wanted]
            known = {t["name"]: t for t in topics}
            topics = [known.get(n, {"name": n, "error_code": 3, "partitions": []})
                      for n in names]
        return {"brokers": [{"node_id": 1, "host": "127.0.0.1", "port": self.broker.port}],
                "controller_id": 1, "cluster_id": "cid", "topics": topics}

    def create_topics(self, request: Request) -> dict:
        return {"topics": [{"name": t.name, "topic_id": TOPIC_ID,
                            "error_code": self.create_error, "error_message": None}
                           for t in request.body.topics]}

    def delete_topics(self, request: Request) -> dict:
        return {"responses": [{"name": t.name, "error_code": 0}
                              for t in request.body.topics]}


async def test_trio_admin_maps_requests_and_results(nursery: trio.Nursery) -> None:
    stub = AdminStub()
    broker = await stub.start(nursery)
    async with Admin({"bootstrap.servers": f"127.0.0.1:{broker.port}"}) as admin:
        created = await admin.create_topics([NewTopic("t", 3, 1, {"retention.ms": "1000"})])
        assert created == {"t": TOPIC_ID}
        (request,) = broker.requests(ApiKey.CREATE_TOPICS)
        (topic,) = request.body.topics
        assert (topic.num_partitions, topic.replication_factor) == (3, 1)
        assert [(c.name, c.value) for c in topic.configs] == [("retention.ms", "1000")]
        assert await admin.list_topics() == ["t"]
        assert await admin.list_topics(include_internal=True) == ["__consumer_offsets", "t"]
        (described,) = await admin.describe_topics(["t"])
        assert described.topic_id == TOPIC_ID
        assert [p.partition for p in described.partitions] == [0, 1]
        with pytest.raises(KafkaError) as info:
            await admin.describe_topics(["nope"])
        assert info.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        await admin.delete_topics(["t"])
        delete = broker.requests(ApiKey.DELETE_TOPICS)[0]
        assert delete.api_version == 6
        assert [t.name for t in delete.body.topics] == ["t"]
        with pytest.raises(KafkaError) as info:
            await admin.create_partitions({"t": 2})
        assert info.value.code == ErrorCode.INVALID_PARTITIONS
        assert "higher than" in info.value.message
        configs = await admin.describe_configs("t")
        assert configs["retention.ms"].source == "DYNAMIC_TOPIC_CONFIG"
        assert configs["segment.bytes"].is_default
        await admin.incremental_alter_configs("t", {"retention.ms": "5", "cleanup.policy": None})
        alter = broker.requests(ApiKey.INCREMENTAL_ALTER_CONFIGS)[0]
        assert [(c.name, c.config_operation, c.value)
                for c in alter.body.resources[0].configs] == [
            ("retention.ms", 0, "5"), ("cleanup.policy", 1, None)]
        cluster = await admin.describe_cluster()
        assert (cluster.cluster_id, cluster.controller_id) == ("cid", 1)
        assert cluster.brokers[0].rack == "r1"


async def test_blocking_admin_raises_kafka_error_codes(nursery: trio.Nursery) -> None:
    stub = AdminStub()
    stub.create_error = ErrorCode.TOPIC_ALREADY_EXISTS
    broker = await stub.start(nursery)

    def run() -> ErrorCode:
        with BlockingAdmin(bootstrap_servers=f"127.0.0.1:{broker.port}") as admin:
            with pytest.raises(KafkaError) as info:
                admin.create_topics([NewTopic("t")])
            versions = admin.broker_versions()
            assert versions[1][1][ApiKey.METADATA] == (0, 12)
            return info.value.code

    assert await in_thread(run) == ErrorCode.TOPIC_ALREADY_EXISTS
    request = broker.requests(ApiKey.CREATE_TOPICS)[0]
    assert request.body.topics[0].num_partitions == -1


def test_describe_lines_follow_kafka_format() -> None:
    description = TopicDescription("t", TOPIC_ID, False, [
        PartitionInfo("t", 0, 1, 0, (1, 2, 3), (1, 2, 3)),
        PartitionInfo("t", 1, -1, 0, (2, 3, 1), (2,)),
    ])
    assert describe_lines(description, {"retention.ms": "1000", "a": "b"}) == [
        f"Topic: t\tTopicId: {topic_id_text(TOPIC_ID)}\tPartitionCount: 2\t"
        "ReplicationFactor: 3\tConfigs: a=b,retention.ms=1000",
        "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\tElr: \tLastKnownElr: ",
        "\tTopic: t\tPartition: 1\tLeader: none\tReplicas: 2,3,1\tIsr: 2\tElr: \tLastKnownElr: ",
    ]
    assert describe_lines(description, {}, under_replicated_only=True) == [
        "\tTopic: t\tPartition: 1\tLeader: none\tReplicas: 2,3,1\tIsr: 2\tElr: \tLastKnownElr: "]
    assert topic_id_text(TOPIC_ID) == "EjRWeBI0VngSNFZ4EjRWeA"


def test_parse_configs_requires_key_value() -> None:
    assert parse_configs(["a=1", "b=x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(ValueError, match="key=val"):
        parse_configs(["novalue"])


def test_api_lines_mark_unsupported_and_the_usable_version() -> None:
    lines = api_lines({0: (3, 11), 3: (0, 12), 999: (0, 1)}, {0: (3, 9), 3: (0, 12)},
                      {0: "Produce", 3: "Metadata"})
    assert lines == ["\tProduce(0): 3 to 11 [usable: 9],",
                     "\tMetadata(3): 0 to 12 [usable: 12],",
                     "\tUNKNOWN(999): 0 to 1 [usable: UNSUPPORTED]"]


def test_describe_shows_every_config_not_from_the_defaults() -> None:
    """kafka-topics.sh lists topic overrides and broker-set values, not built-in defaults."""
    class ConfigsOnlyAdmin:
        def describe_configs(self, topic: str) -> dict[str, ConfigEntry]:
            assert topic == "t"
            return {name: ConfigEntry(name, value, source, False, False)
                    for name, value, source in [
                ("retention.ms", "1000", "DYNAMIC_TOPIC_CONFIG"),
                ("min.insync.replicas", "2", "STATIC_BROKER_CONFIG"),
                ("segment.bytes", "1073741824", "DEFAULT_CONFIG"),
            ]}

    assert _non_default_configs(ConfigsOnlyAdmin(), "t") == {"retention.ms": "1000",
                                                  "min.insync.replicas": "2"}


def test_admin_calls_go_to_a_connected_broker_and_away_from_one_that_failed() -> None:
    from clients.admin.admin_config import pick_target
    from clients.common.cluster import BrokerNode, ClusterMetadata

    from clients.admin.operations import Call
    from clients.net import KafkaConnectionError

    cluster = ClusterMetadata(brokers={i: BrokerNode(i, "127.0.0.1", 9090 + i) for i in (1, 2, 3)},
                              controller_id=3)
    anywhere = Call(ApiKey.METADATA, lambda v: {})
    controller = Call(ApiKey.CREATE_TOPICS, lambda v: {}, to_controller=True)
    leader = Call(ApiKey.LIST_OFFSETS, lambda v: {}, node_id=1)
    # A broker that is listed but stalled must not be chosen just for its low id.
    assert pick_target(cluster, anywhere, {("127.0.0.1", 9092)}, set()).node_id == 2
    assert pick_target(cluster, anywhere, set(), set()).node_id == 1
    assert pick_target(cluster, anywhere, {("127.0.0.1", 9092)}, {2}).node_id == 1
    assert pick_target(cluster, controller, {("127.0.0.1", 9092)}, set()).node_id == 3
    # A call for a partition's leader goes there, connected or not.
    assert pick_target(cluster, leader, {("127.0.0.1", 9092)}, set()).node_id == 1
    with pytest.raises(KafkaConnectionError, match="broker 7"):
        pick_target(cluster, Call(ApiKey.LIST_OFFSETS, lambda v: {}, node_id=7), set(), set())
