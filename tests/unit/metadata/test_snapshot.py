"""Snapshot round trip: image.to_records() replayed into an empty image gives the same image,
for images reached by random sequences of controller decisions (which also must keep the
cluster's invariants)."""

from __future__ import annotations

import dataclasses
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clients.protocol import ApiKey, as_message
from metadata.controller.alter_partition import alter_partition
from metadata.controller.brokers import fence_expired_brokers, unregister_broker
from metadata.controller.configs import incremental_alter_configs
from metadata.controller.partitions import create_partitions
from metadata.controller.producer_ids import allocate_producer_ids
from metadata.controller.topics import delete_topics
from metadata.delta import apply_records
from metadata.election import preferred_leader_changes
from metadata.image import MetadataImage
from metadata.record_codec import decode_record, encode_record
from tests.unit.metadata.controller.harness import Cluster, typed

BROKERS = st.integers(1, 5)
NAMES = st.sampled_from(["a", "b", "c.d", "c_d", "e"])

CREATE = st.tuples(st.just("create"), NAMES, st.integers(1, 4), st.integers(1, 3))
OPS = st.one_of(
    CREATE,
    CREATE,
    st.tuples(st.just("config"), NAMES, st.sampled_from(["retention.ms", "cleanup.policy"]), st.booleans()),
    st.tuples(st.just("register"), BROKERS, st.booleans(), st.sampled_from([None, "r1", "r2"])),
    st.tuples(st.just("heartbeat"), BROKERS, st.sampled_from(["plain", "fence", "shutdown"])),
    st.tuples(st.just("expire"), st.integers(0, 10_000)),
    st.tuples(st.just("create"), NAMES, st.integers(1, 4), st.integers(1, 3)),
    st.tuples(st.just("delete"), NAMES),
    st.tuples(st.just("grow"), NAMES, st.integers(1, 2)),
    st.tuples(st.just("config"), NAMES, st.sampled_from(["retention.ms", "cleanup.policy"]), st.booleans()),
    st.tuples(st.just("shrink"), NAMES),
    st.tuples(st.just("pids"), BROKERS),
    st.tuples(st.just("rebalance")),
    st.tuples(st.just("unregister"), BROKERS),
)


def run(c: Cluster, op: tuple) -> None:
    kind = op[0]
    if kind == "register":
        _, bid, new_incarnation, rack = op
        inc = uuid.UUID(int=c.now_ms, version=4) if new_incarnation else None
        c.register(bid, rack=rack, incarnation=inc)
    elif kind == "heartbeat" and c.image.broker(op[1]) is not None:
        c.heartbeat(op[1], want_fence=op[2] == "fence", want_shut_down=op[2] == "shutdown")
    elif kind == "expire":
        c.now_ms += op[1]
        c.commit(fence_expired_brokers(c.image, c.tracker, c.now_ms, c.settings))
    elif kind == "create":
        c.create_topic(op[1], op[2], op[3])
    elif kind == "delete":
        c.decide(delete_topics(c.image, typed(ApiKey.DELETE_TOPICS, {"topic_names": [op[1]]}, 5), c.now_ms, settings=c.settings))
    elif kind == "grow":
        topic = c.image.topic(op[1])
        count = (topic.partition_count() if topic else 0) + op[2]
        c.decide(create_partitions(c.image, typed(ApiKey.CREATE_PARTITIONS, {"topics": [{"name": op[1], "count": count, "assignments": None}]}), c.now_ms, rng=c.rng))
    elif kind == "config":
        _, name, key, delete = op
        value = {"retention.ms": "1234", "cleanup.policy": "compact"}[key]
        request = {"resources": [{"resource_type": 2, "resource_name": name, "configs": [
            {"name": key, "config_operation": 1 if delete else 0, "value": None if delete else value}]}]}
        c.decide(incremental_alter_configs(c.image, typed(ApiKey.INCREMENTAL_ALTER_CONFIGS, request), c.now_ms, settings=c.settings))
    elif kind == "shrink":
        topic = c.image.topic(op[1])
        if topic is None:
            return
        part = topic.partitions[0]
        if part.leader == -1 or len(part.isr) < 2:
            return
        new_isr = [b for b in part.isr if b != part.isr[-1] or b == part.leader][: len(part.isr) - 1]
        request = {"broker_id": part.leader, "broker_epoch": c.image.broker(part.leader).epoch, "topics": [
            {"topic_id": topic.topic_id, "partitions": [{
                "partition_index": 0, "leader_epoch": part.leader_epoch, "partition_epoch": part.partition_epoch,
                "new_isr_with_epochs": [{"broker_id": b, "broker_epoch": -1} for b in new_isr],
                "leader_recovery_state": part.leader_recovery_state}]}]}
        c.decide(alter_partition(c.image, as_message(ApiKey.ALTER_PARTITION, 3, request), c.now_ms))
    elif kind == "pids" and c.image.broker(op[1]) is not None:
        request = {"broker_id": op[1], "broker_epoch": c.image.broker(op[1]).epoch}
        body = as_message(ApiKey.ALLOCATE_PRODUCER_IDS, 0, request)
        c.decide(allocate_producer_ids(c.image, body, c.now_ms, settings=c.settings))
    elif kind == "rebalance":
        c.commit(preferred_leader_changes(c.image))
    elif kind == "unregister":
        records, _ = unregister_broker(c.image, op[1], c.settings)
        c.commit(records)


def check_invariants(image: MetadataImage) -> None:
    for topic in image.topics_by_id.values():
        assert image.topics_by_name[topic.name] is topic
        assert sorted(topic.partitions) == list(range(len(topic.partitions)))
        for part in topic.partitions.values():
            assert part.isr and set(part.isr) <= set(part.replicas)
            if part.leader != -1:
                assert part.leader in part.isr
                reg = image.broker(part.leader)
                assert reg is not None and not reg.fenced


def assert_snapshot_round_trips(image: MetadataImage) -> None:
    records = [decode_record(encode_record(r)) for r in image.to_records()]
    _, rebuilt = apply_records(MetadataImage.empty(), records)
    assert rebuilt == dataclasses.replace(image, offset=rebuilt.offset, epoch=rebuilt.epoch)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=5, max_size=60))
def test_random_histories_round_trip_and_keep_invariants(ops: list[tuple]) -> None:
    c = Cluster()
    c.add_brokers(1, 2, 3)
    for op in ops:
        run(c, op)
        check_invariants(c.image)
    assert_snapshot_round_trips(c.image)


def test_rich_scenario_round_trips() -> None:
    c = Cluster()
    c.add_brokers(1, 2, 3, 4, racks={1: "x", 2: "y", 3: "x", 4: "y"})
    for op in [
        ("create", "a", 4, 3), ("create", "c.d", 2, 2), ("config", "a", "retention.ms", False),
        ("pids", 1), ("heartbeat", 2, "shutdown"), ("expire", 5000), ("heartbeat", 1, "plain"),
        ("heartbeat", 3, "plain"), ("heartbeat", 4, "plain"), ("expire", 4000), ("register", 2, True, "y"),
        ("heartbeat", 2, "plain"), ("grow", "a", 2), ("shrink", "a"), ("rebalance",), ("delete", "c.d"),
    ]:
        run(c, op)
    assert c.image.topic("a").partition_count() == 6
    assert c.image.topic("c.d") is None and not c.image.broker(2).fenced
    assert c.image.next_producer_id == 1000
    assert_snapshot_round_trips(c.image)
