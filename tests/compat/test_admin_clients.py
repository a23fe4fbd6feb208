"""The admin clients of confluent-kafka and kafka-python against a launcher cluster: create,
describe, incrementally alter the config of and delete topics, and describe the cluster."""

from __future__ import annotations

import pytest

from tests.compat.cluster import Cluster, wait_for

confluent_kafka = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)
from kafka.admin import ConfigResource as KpConfigResource  # noqa: E402
from kafka.admin import ConfigResourceType, KafkaAdminClient  # noqa: E402
from kafka.admin import NewTopic as KpNewTopic  # noqa: E402

TIMEOUT = 30


def topic_names(cluster: Cluster) -> set[str]:
    return {t["name"] for t in cluster.metadata(None)["topics"]}


def test_confluent_admin_topic_lifecycle(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "broker.address.family": "v4"})
    created = admin.create_topics([NewTopic("admin-ck", num_partitions=3, replication_factor=1,
                                            config={"retention.ms": "3600000"})])
    created["admin-ck"].result(TIMEOUT)
    cluster.wait_for_leaders("admin-ck", 3)

    listed = admin.list_topics(timeout=TIMEOUT).topics
    assert sorted(listed["admin-ck"].partitions) == [0, 1, 2]
    for partition in listed["admin-ck"].partitions.values():
        assert partition.leader in (1, 2, 3)
        assert partition.replicas == [partition.leader] == partition.isrs

    description = admin.describe_topics(
        confluent_kafka.TopicCollection(["admin-ck"]))["admin-ck"].result(TIMEOUT)
    assert description.name == "admin-ck" and len(description.partitions) == 3
    assert description.topic_id is not None

    resource = ConfigResource(ConfigResource.Type.TOPIC, "admin-ck")
    configs = admin.describe_configs([resource])[resource].result(TIMEOUT)
    assert configs["retention.ms"].value == "3600000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["cleanup.policy"].value == "delete"
    assert configs["cleanup.policy"].is_default

    alter = ConfigResource(ConfigResource.Type.TOPIC, "admin-ck", incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
    admin.incremental_alter_configs([alter])[alter].result(TIMEOUT)

    def altered() -> bool:
        now = admin.describe_configs([resource])[resource].result(TIMEOUT)
        return (now["cleanup.policy"].value == "compact"
                and now["retention.ms"].value == "604800000" and now["retention.ms"].is_default)

    wait_for(altered, "the altered configs to be described")

    cluster_description = admin.describe_cluster().result(TIMEOUT)
    assert sorted(n.id for n in cluster_description.nodes) == [1, 2, 3]
    assert cluster_description.cluster_id == cluster.info.cluster_id
    assert cluster_description.controller.id in (1, 2, 3)

    admin.delete_topics(["admin-ck"])["admin-ck"].result(TIMEOUT)
    wait_for(lambda: "admin-ck" not in topic_names(cluster), "admin-ck to disappear")


def test_confluent_admin_reports_errors(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "broker.address.family": "v4"})
    admin.create_topics([NewTopic("admin-ck-dup", 1, 1)])["admin-ck-dup"].result(TIMEOUT)
    with pytest.raises(confluent_kafka.KafkaException) as duplicate:
        admin.create_topics([NewTopic("admin-ck-dup", 1, 1)])["admin-ck-dup"].result(TIMEOUT)
    assert duplicate.value.args[0].code() == confluent_kafka.KafkaError.TOPIC_ALREADY_EXISTS
    with pytest.raises(confluent_kafka.KafkaException) as missing:
        admin.delete_topics(["admin-ck-missing"])["admin-ck-missing"].result(TIMEOUT)
    assert missing.value.args[0].code() == confluent_kafka.KafkaError.UNKNOWN_TOPIC_OR_PART


def test_kafka_python_admin_topic_lifecycle(cluster: Cluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        result = admin.create_topics([KpNewTopic("admin-kp", 2, 1,
                                                 topic_configs={"segment.bytes": "1048576"})])
        assert [t["error_code"] for t in result["topics"]] == [0]
        cluster.wait_for_leaders("admin-kp", 2)
        assert "admin-kp" in admin.list_topics()

        (described,) = admin.describe_topics(["admin-kp"])
        assert described["error_code"] == 0
        assert sorted(p["partition_index"] for p in described["partitions"]) == [0, 1]
        for partition in described["partitions"]:
            assert partition["replica_nodes"] == [partition["leader_id"]] == partition["isr_nodes"]
            assert partition["leader_epoch"] >= 0 and partition["offline_replicas"] == []

        resource = KpConfigResource(ConfigResourceType.TOPIC, "admin-kp")
        described_configs = admin.describe_configs([resource])
        assert "admin-kp" in described_configs["topic"], described_configs
        raw = cluster.request(32, {"resources": [{"resource_type": 2, "resource_name": "admin-kp",
                                                  "configuration_keys": ["segment.bytes"]}],
                                   "include_synonyms": True}, version=4)
        entry = raw["results"][0]["configs"][0]
        assert (entry["name"], entry["value"], entry["config_source"]) == (
            "segment.bytes", "1048576", 1)  # 1 = DYNAMIC_TOPIC_CONFIG

        altered = admin.alter_configs([KpConfigResource(
            ConfigResourceType.TOPIC, "admin-kp", configs={"max.message.bytes": "65536"})],
            incremental=True)
        assert altered == {"topic": {"admin-kp": "OK"}}, altered
        wait_for(lambda: cluster.request(32, {"resources": [{
            "resource_type": 2, "resource_name": "admin-kp",
            "configuration_keys": ["max.message.bytes"]}]}, version=4)
            ["results"][0]["configs"][0]["value"] == "65536", "max.message.bytes to change")

        description = admin.describe_cluster()
        assert sorted(b["broker_id"] for b in description["brokers"]) == [1, 2, 3]
        assert description["cluster_id"] == cluster.info.cluster_id
        assert description["controller_id"] in (1, 2, 3)

        deleted = admin.delete_topics(["admin-kp"])
        assert [t["error_code"] for t in deleted["topics"]] == [0], deleted
        wait_for(lambda: "admin-kp" not in admin.list_topics(), "admin-kp to disappear")
    finally:
        admin.close()
