"""Broker-level topic defaults set dynamically reach existing topics at once, as in Kafka:
a cluster-wide `min.insync.replicas` makes acks=all to a topic without an override fail with
NOT_ENOUGH_REPLICAS as soon as its ISR is below it (no restart), a broker's own value beats
the cluster default, a topic override keeps its own value, and DescribeConfigs reports each
topic's effective value with its source."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from cluster.testing.cluster import RaftkaCluster, start_cluster
from cluster.testing.waiting import wait_for
from clients.admin import NewTopic
from clients.protocol import ApiKey, ErrorCode
from tests.integration.quorum_helpers import log_end_offset, produce_record, send

pytestmark = pytest.mark.slow

RAFTKA = str(Path(sys.executable).with_name("raftka"))
LEADER = 1
STOPPED = 3
APPLY_TIMEOUT_S = 20.0
# DescribeConfigs sources.
DYNAMIC_TOPIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT = 1, 2, 3, 4, 5


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RaftkaCluster]:
    with start_cluster(tmp_path_factory.mktemp("dynamic-defaults"), nodes=3) as started:
        yield started


def configs(cluster: RaftkaCluster, *args: str) -> None:
    """`raftka configs --entity-type brokers ...`; it must succeed."""
    done = subprocess.run([RAFTKA, "configs", "--bootstrap-server", cluster.bootstrap_servers,
                           "--entity-type", "brokers", "--alter", *args],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def create_on_all(cluster: RaftkaCluster, topic: str, config: dict[str, str]) -> None:
    """`topic` with one partition on every broker, led by LEADER, and a full ISR."""
    with cluster.admin() as admin:
        admin.create_topics([NewTopic(topic, configs=config,
                                      replica_assignments={0: [LEADER, 2, 3]})])
    cluster.wait_for_isr(topic, 3)


def port(cluster: RaftkaCluster, node: int = LEADER) -> int:
    client_port = cluster.info.node(node).client_port
    assert client_port is not None
    return client_port


def produce(cluster: RaftkaCluster, topic: str, value: bytes) -> int:
    """acks=all Produce of one record to the leader; its error code."""
    answer = produce_record(port(cluster), topic, value, acks=-1)
    assert answer is not None, "the leader did not answer"
    return int(answer["error_code"])


def produce_until(cluster: RaftkaCluster, topic: str, code: int, what: str,
                  value: bytes = b"probe") -> None:
    """Produce until the leader answers `code` (it applies a config with the metadata
    update that carries it, a moment after the controller committed it)."""
    wait_for(lambda: produce(cluster, topic, value) == code, what, APPLY_TIMEOUT_S)


def describe(cluster: RaftkaCluster, topic: str, key: str) -> tuple[str, int, list[tuple]]:
    """(value, source, synonyms) of topic config `key`, as LEADER reports it."""
    response = send(port(cluster), ApiKey.DESCRIBE_CONFIGS, {
        "resources": [{"resource_type": 2, "resource_name": topic, "configuration_keys": [key]}],
        "include_synonyms": True})
    assert response is not None
    (result,) = response["results"]
    assert result["error_code"] == ErrorCode.NONE, result
    (entry,) = result["configs"]
    synonyms: list[Any] = entry["synonyms"]
    return (entry["value"], entry["config_source"],
            [(s["name"], s["value"], s["source"]) for s in synonyms])


def test_message_max_bytes_default_applies_to_an_existing_topic(cluster: RaftkaCluster) -> None:
    create_on_all(cluster, "sized", {})
    assert produce(cluster, "sized", bytes(4000)) == ErrorCode.NONE
    configs(cluster, "--entity-default", "--add-config", "message.max.bytes=2000")
    try:
        produce_until(cluster, "sized", ErrorCode.MESSAGE_TOO_LARGE,
                      "the cluster-wide message.max.bytes to reach the existing topic",
                      bytes(4000))
        assert describe(cluster, "sized", "max.message.bytes")[:2] == ("2000", DYNAMIC_DEFAULT)
    finally:
        configs(cluster, "--entity-default", "--delete-config", "message.max.bytes")
    produce_until(cluster, "sized", ErrorCode.NONE, "the deleted default to lift the limit",
                  bytes(4000))


def test_min_insync_replicas_default_applies_to_existing_topics(
        cluster: RaftkaCluster) -> None:
    create_on_all(cluster, "plain", {})
    create_on_all(cluster, "own", {"min.insync.replicas": "2"})
    for topic in ("plain", "own"):
        assert produce(cluster, topic, b"all in sync") == ErrorCode.NONE
    cluster.stop(STOPPED)
    for topic in ("plain", "own"):
        wait_for(lambda: _isr(cluster, topic) == [LEADER, 2],
                 f"the ISR of {topic} to shrink to two", APPLY_TIMEOUT_S)
    assert produce(cluster, "plain", b"two of three") == ErrorCode.NONE  # the default is 1

    configs(cluster, "--entity-default", "--add-config", "min.insync.replicas=3")
    produce_until(cluster, "plain", ErrorCode.NOT_ENOUGH_REPLICAS,
                  "the cluster-wide min.insync.replicas to reach the existing topic")
    end = log_end_offset(port(cluster), "plain")
    assert produce(cluster, "plain", b"refused") == ErrorCode.NOT_ENOUGH_REPLICAS
    assert log_end_offset(port(cluster), "plain") == end, "a refused record was appended"
    assert produce(cluster, "own", b"own value") == ErrorCode.NONE
    assert describe(cluster, "plain", "min.insync.replicas") == ("3", DYNAMIC_DEFAULT, [
        ("min.insync.replicas", "3", DYNAMIC_DEFAULT), ("min.insync.replicas", "1", DEFAULT)])
    own = describe(cluster, "own", "min.insync.replicas")
    assert own[:2] == ("2", DYNAMIC_TOPIC)
    assert [source for _, _, source in own[2]] == [DYNAMIC_TOPIC, DYNAMIC_DEFAULT, DEFAULT]

    # The leader's own dynamic value beats the cluster default on that broker.
    configs(cluster, "--entity-name", str(LEADER), "--add-config", "min.insync.replicas=2")
    produce_until(cluster, "plain", ErrorCode.NONE,
                  "broker 1's own min.insync.replicas to override the cluster default")
    assert describe(cluster, "plain", "min.insync.replicas")[:2] == ("2", DYNAMIC_BROKER)
    configs(cluster, "--entity-name", str(LEADER), "--delete-config", "min.insync.replicas")
    produce_until(cluster, "plain", ErrorCode.NOT_ENOUGH_REPLICAS,
                  "the cluster default to hold again on broker 1")

    configs(cluster, "--entity-default", "--delete-config", "min.insync.replicas")
    produce_until(cluster, "plain", ErrorCode.NONE,
                  "acks=all to work again once the default is deleted")
    assert describe(cluster, "plain", "min.insync.replicas")[:2] == ("1", DEFAULT)


def _isr(cluster: RaftkaCluster, topic: str) -> list[int] | None:
    try:
        with cluster.admin() as admin:
            (description,) = admin.describe_topics([topic])
    except Exception:  # the stopped node was asked, or the controller is moving
        return None
    return sorted(description.partitions[0].isr)
