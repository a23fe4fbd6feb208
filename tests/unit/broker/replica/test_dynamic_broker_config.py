"""Dynamic broker configs reaching a broker's parts: effective values by priority, the
replication throttles, the cleaner knobs and the broker-level topic defaults (existing
partitions included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import ServerConfig
from broker.config.dynamic import DynamicBrokerConfig, dynamic_values
from broker.log.maintenance import LogMaintenance
from broker.log.manager import LogManager
from broker.replica.dynamic_log_defaults import DynamicLogDefaults
from broker.replica.errors import NotEnoughReplicas
from broker.replica.manager import ReplicaManager
from broker.replica.replication_quota import LONG_MAX, ReplicationQuotas, apply_throttle_config
from metadata.records import BROKER_RESOURCE, TOPIC_RESOURCE, ConfigRecord, PartitionChangeRecord
from tests.unit.broker.log.helpers import batch
from tests.unit.metadata.controller.harness import Cluster

BASE = {"process.roles": "broker,controller", "node.id": "1",
        "controller.quorum.voters": "1@127.0.0.1:9093",
        "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
        "controller.listener.names": "CONTROLLER"}


def _config(tmp_path: Path, **extra: str) -> ServerConfig:
    return ServerConfig(BASE | {"log.dirs": str(tmp_path / "logs")} | extra)


def _set(cluster: Cluster, broker: str, key: str, value: str | None,
         rtype: int = BROKER_RESOURCE) -> None:
    cluster.commit([ConfigRecord(resource_type=rtype, resource_name=broker, name=key,
                                 value=value)])


def test_most_specific_value_wins() -> None:
    cluster = Cluster()
    static = {"log.cleaner.threads": "4", "num.partitions": "3"}
    assert dynamic_values(static, cluster.image, 1) == {"log.cleaner.threads": "4"}
    _set(cluster, "", "log.cleaner.threads", "2")
    assert dynamic_values(static, cluster.image, 1)["log.cleaner.threads"] == "2"
    _set(cluster, "1", "log.cleaner.threads", "5")
    assert dynamic_values(static, cluster.image, 1)["log.cleaner.threads"] == "5"
    assert dynamic_values(static, cluster.image, 2)["log.cleaner.threads"] == "2"


def test_throttles_follow_broker_and_topic_configs(tmp_path: Path) -> None:
    cluster = Cluster()
    cluster.add_brokers(2)
    cluster.create_topic("t", partitions=2)
    dynamic = DynamicBrokerConfig(_config(tmp_path))
    quotas = ReplicationQuotas.for_broker(1)
    dynamic.subscribe(lambda values, image: apply_throttle_config(quotas, values, image))

    def publish() -> None:
        assert cluster.last_delta is not None
        dynamic.on_metadata_update(cluster.last_delta, cluster.image)

    _set(cluster, "t", "leader.replication.throttled.replicas", "1:1,0:2", TOPIC_RESOURCE)
    publish()
    assert not quotas.leader.active  # no rate yet
    _set(cluster, "", "leader.replication.throttled.rate", "1000")
    publish()
    assert quotas.leader.active and quotas.leader.rate_limit == 1000
    assert quotas.leader.is_throttled("t", 1) and not quotas.leader.is_throttled("t", 0)
    assert not quotas.follower.active
    _set(cluster, "", "leader.replication.throttled.rate", None)
    publish()
    assert not quotas.leader.active and quotas.leader.rate_limit == LONG_MAX


def test_cleaner_knobs_and_log_defaults_apply(tmp_path: Path) -> None:
    config = _config(tmp_path, **{"log.cleaner.backoff.ms": "1000"})
    logs = LogManager([tmp_path / "logs"], config.log_defaults())
    maintenance = LogMaintenance(logs, config)
    replicas = ReplicaManager(1, logs, config.log_defaults())
    log = logs.get_or_create_log("t", 0, None, {})
    cluster = Cluster()
    cluster.add_brokers(1)
    cluster.create_topic("t")
    dynamic = DynamicBrokerConfig(config)
    dynamic.subscribe(lambda values, image: maintenance.reconfigure(values))
    dynamic.subscribe(DynamicLogDefaults(replicas, config))

    _set(cluster, "", "log.cleaner.threads", "0")
    _set(cluster, "1", "log.cleaner.backoff.ms", "250")
    _set(cluster, "", "log.retention.ms", "5000")
    _set(cluster, "", "log.cleaner.io.max.bytes.per.second", "1e6")
    dynamic.on_metadata_update(cluster.last_delta, cluster.image)  # type: ignore[arg-type]
    assert (maintenance.cleaner_threads, maintenance.cleaner_backoff_ms) == (0, 250)
    assert maintenance.cleaner_io_max_bytes_per_second == 1e6
    assert log.config.retention_ms == 5000

    _set(cluster, "1", "log.cleaner.backoff.ms", None)
    _set(cluster, "", "log.retention.ms", None)
    dynamic.on_metadata_update(cluster.last_delta, cluster.image)  # type: ignore[arg-type]
    assert maintenance.cleaner_backoff_ms == 1000  # the static value again
    assert log.config.retention_ms == 7 * 24 * 3_600_000
    logs.close()


def test_topic_defaults_reach_existing_partitions_at_once(tmp_path: Path) -> None:
    """A cluster-wide min.insync.replicas (or any broker-level topic default) applies to the
    local partitions of existing topics that do not override it, with the metadata update
    that carries it; this broker's own value beats it; deleting it restores the static
    value."""
    config = _config(tmp_path, **{"min.insync.replicas": "1", "log.retention.hours": "24"})
    logs = LogManager([tmp_path / "logs"], config.log_defaults())
    replicas = ReplicaManager(1, logs, config.log_defaults())
    dynamic = DynamicBrokerConfig(config)
    dynamic.subscribe(DynamicLogDefaults(replicas, config))
    cluster = Cluster()
    cluster.add_brokers(1, 2, 3)
    published = cluster.image

    def publish() -> None:  # one delta at a time, in BrokerServer.on_metadata's order
        nonlocal published
        assert cluster.last_delta is not None and cluster.last_delta.image is published
        dynamic.on_metadata_update(cluster.last_delta, cluster.image)
        replicas.on_metadata_update(cluster.last_delta, cluster.image)
        published = cluster.image

    def alter(broker: str, **values: str | None) -> None:
        cluster.commit([ConfigRecord(resource_type=BROKER_RESOURCE, resource_name=broker,
                                     name=key.replace("_", "."), value=value)
                        for key, value in values.items()])
        publish()

    everywhere = [{"partition_index": 0, "broker_ids": [1, 2, 3]}]
    for name, configs in (("plain", []), ("own", [{"name": "min.insync.replicas",
                                                   "value": "2"}])):
        cluster.create_topic(name, num_partitions=-1, replication_factor=-1,
                             assignments=everywhere, configs=configs)
        publish()
        topic_id = cluster.image.topic(name).topic_id  # type: ignore[union-attr]
        cluster.commit([PartitionChangeRecord(partition_id=0, topic_id=topic_id, isr=(1, 2))])
        publish()
    plain, own = (replicas.leader_partition(name, 0) for name in ("plain", "own"))
    plain.append_as_leader(batch([b"a"]), -1)

    alter("", min_insync_replicas="3", log_retention_ms="60000")
    assert (plain.min_insync_replicas, own.min_insync_replicas) == (3, 2)
    with pytest.raises(NotEnoughReplicas):
        plain.append_as_leader(batch([b"refused"]), -1)
    own.append_as_leader(batch([b"kept"]), -1)  # its own value still holds
    assert plain.log.config.retention_ms == own.log.config.retention_ms == 60000
    assert replicas.under_min_isr_partitions == 1

    alter("2", min_insync_replicas="1")  # another broker's value: not this one's
    assert plain.min_insync_replicas == 3
    alter("1", min_insync_replicas="2")  # this broker's own beats the cluster default
    assert plain.min_insync_replicas == 2
    plain.append_as_leader(batch([b"b"]), -1)

    alter("1", min_insync_replicas=None)
    alter("", min_insync_replicas=None, log_retention_ms=None)
    assert (plain.min_insync_replicas, own.min_insync_replicas) == (1, 2)
    assert plain.log.config.retention_ms == 24 * 3_600_000
    # A topic created now starts from the same values.
    alter("", min_insync_replicas="2")
    cluster.create_topic("later", num_partitions=-1, replication_factor=-1,
                         assignments=everywhere)
    publish()
    assert replicas.leader_partition("later", 0).min_insync_replicas == 2
    logs.close()
