"""The operations APIs through the admin clients of confluent-kafka and kafka-python, against a
launcher cluster: OffsetDelete, DescribeLogDirs, DescribeQuorum, DescribeCluster,
ElectLeaders, ListTransactions, DescribeTransactions and DescribeProducers.

What the installed clients do not expose, and so is not reached from them here:
confluent-kafka (2.16) has no call for DescribeLogDirs, OffsetDelete, DescribeQuorum,
UnregisterBroker, the transactions APIs or the reassignment APIs; kafka-python (3.0) has no
UnregisterBroker call.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.compat.cluster import Cluster, wait_for

confluent_kafka = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")
from confluent_kafka import ElectionType, KafkaError  # noqa: E402
from confluent_kafka import TopicPartition as CkTopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402
from kafka.admin import KafkaAdminClient  # noqa: E402
from kafka.errors import GroupIdNotFoundError, KafkaError as KpKafkaError  # noqa: E402
from kafka.structs import OffsetAndMetadata, TopicPartition  # noqa: E402

TIMEOUT = 30
TOPIC = "ops-compat"


@pytest.fixture(scope="module")
def legacy(cluster: Cluster) -> Any:
    cluster.create_topic(TOPIC, partitions=2, replication_factor=3)
    cluster.wait_for_leaders(TOPIC, 2)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        yield admin
    finally:
        admin.close()


def when_coordinated(call: Any) -> Any:
    """kafka-python does not retry a coordinator that is still being created or loaded: retry
    here, whether it raises the retriable error or (as alter_group_offsets does) returns it
    per partition."""
    outcome: list[Any] = []

    def answered() -> bool:
        try:
            result = call()
        except KpKafkaError as exc:
            if not exc.retriable:
                raise
            return False
        if isinstance(result, dict) and any(
                isinstance(error, type) and issubclass(error, KpKafkaError) and error.retriable
                for error in result.values()):
            return False
        outcome.append(result)
        return True
    wait_for(answered, "the coordinator to answer", TIMEOUT)
    return outcome[-1]


def test_kafka_python_deletes_a_groups_offsets(legacy: Any) -> None:
    tp0, tp1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
    when_coordinated(lambda: legacy.alter_group_offsets("ops-compat-g", {
        tp0: OffsetAndMetadata(3, "", -1), tp1: OffsetAndMetadata(4, "", -1)}))
    legacy.delete_group_offsets("ops-compat-g", [tp0])
    remaining = legacy.list_group_offsets("ops-compat-g")["ops-compat-g"]
    assert {tp: meta.offset for tp, meta in remaining.items()} == {tp1: 4}, remaining
    with pytest.raises(GroupIdNotFoundError):
        legacy.delete_group_offsets("ops-compat-nobody", [tp0])


def test_kafka_python_describes_quorum_cluster_and_log_dirs(cluster: Cluster,
                                                            legacy: Any) -> None:
    quorum = legacy.describe_metadata_quorum()
    (partition,) = quorum["topics"][0]["partitions"]
    assert partition["error"] is None and partition["leader_id"] in (1, 2, 3)
    assert sorted(v["replica_id"] for v in partition["current_voters"]) == [1, 2, 3]

    described = legacy.describe_cluster()
    assert described["controller_id"] in (1, 2, 3)
    assert sorted(b["broker_id"] for b in described["brokers"]) == [1, 2, 3]

    dirs = legacy.describe_log_dirs(topic_partitions={TOPIC: [0, 1]}, brokers=[2])
    (broker,) = dirs
    assert broker["broker"] == 2
    (log_dir,) = broker["log_dirs"]
    assert log_dir["error_code"] == 0
    ours = [t for t in log_dir["topics"] if t["name"] == TOPIC]
    assert sorted(p["partition_index"] for p in ours[0]["partitions"]) == [0, 1]


def test_kafka_python_transactions_and_producers(legacy: Any) -> None:
    listed = legacy.list_transactions()
    assert sorted(listed) == [1, 2, 3] and all(v == [] for v in listed.values())
    producers = legacy.describe_producers([TopicPartition(TOPIC, 0)])
    assert producers[TopicPartition(TOPIC, 0)].active_producers == []
    with pytest.raises(KpKafkaError) as unknown:
        when_coordinated(lambda: legacy.describe_transactions(["ops-compat-none"]))
    assert "TransactionalIdNotFound" in type(unknown.value).__name__, unknown.value


def test_kafka_python_elects_leaders(legacy: Any) -> None:
    response = legacy.elect_leaders(0, {TOPIC: [0]}, raise_errors=False)
    # The preferred replica already leads: Kafka's ELECTION_NOT_NEEDED (84).
    assert [(r.topic, [(p.partition_id, p.error_code) for p in r.partition_result])
            for r in response.replica_election_results] == [(TOPIC, [(0, 84)])]


def test_confluent_describes_the_cluster_and_elects_leaders(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "broker.address.family": "v4"})
    described = admin.describe_cluster().result(TIMEOUT)
    assert described.cluster_id and described.controller.id in (1, 2, 3)
    assert sorted(node.id for node in described.nodes) == [1, 2, 3]

    outcome = admin.elect_leaders(ElectionType.PREFERRED,
                                  [CkTopicPartition(TOPIC, 1)]).result(TIMEOUT)
    [(tp, error)] = outcome.items()
    assert (tp.topic, tp.partition) == (TOPIC, 1)
    assert error is not None and error.code() == KafkaError.ELECTION_NOT_NEEDED
