"""Requests naming very many topics, partitions or resources: their handlers let the node's
other tasks run while they work (a task stepping at every checkpoint counts how often), and
a name repeated many times costs one answer, not one per copy."""

from __future__ import annotations

import uuid
from typing import Any

import trio

from broker.apis.common import ITEMS_PER_SLICE
from broker.apis.request import LONG_REQUEST_S, ConnectionContext, RequestRouter
from broker.group.offsets import fetch_offsets, fetch_slices, join_topics
from clients.protocol import ZERO_UUID, ApiKey, ErrorCode, decode_request, encode_request
from clients.protocol.messages.offset_fetch import OffsetFetchRequestData
from metadata.delta import apply_records
from metadata.records import PartitionRecord, TopicRecord
from tests.unit.broker.apis.harness import BROKER_ID, running_broker
from tests.unit.broker.group.harness import running_group_broker
from tests.unit.broker.group.test_coordinator_clients import ready

MANY = 8 * ITEMS_PER_SLICE
CONNECTION = ConnectionContext(1, "PLAINTEXT", "PLAINTEXT", ("127.0.0.1", 1))


async def dispatch_counting_steps(router: RequestRouter, api_key: int, version: int,
                                  body: dict[str, Any]) -> tuple[Any, int]:
    """The response, and how often another task got to run while it was worked out (once
    per checkpoint of the handler, bar the last, whose turn may come after the answer)."""
    request = decode_request(encode_request(api_key, version, 1, "big", body))
    steps = 0

    async def other_task() -> None:
        nonlocal steps
        while True:
            await trio.lowlevel.checkpoint()
            steps += 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other_task)
        await trio.sleep(0.01)
        before = steps
        response = await router.dispatch(request, CONNECTION)
        during = steps - before
        nursery.cancel_scope.cancel()
    assert response is not None
    return response, during


async def test_metadata_for_many_topics_lets_others_run_and_answers_each_topic_once(tmp_path):
    async with running_broker(tmp_path, extra={"auto.create.topics.enable": "false"}) as broker:
        broker.create_topic("known", 3)
        names = [f"missing{i}" for i in range(MANY)] + ["known"] * MANY + ["missing0"] * 100
        body = {"topics": [{"name": n, "topic_id": ZERO_UUID} for n in names],
                "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
        response, steps = await dispatch_counting_steps(broker.server.router,
                                                        ApiKey.METADATA, 12, body)
    assert steps >= MANY // ITEMS_PER_SLICE - 1
    answered = [t.name for t in response.topics]
    assert answered == [f"missing{i}" for i in range(MANY)] + ["known"]
    assert len(response.topics[-1].partitions) == 3


async def test_list_offsets_for_many_partitions_lets_others_run(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t", 1)
        body = {"replica_id": -1, "isolation_level": 0, "topics": [{"name": "t", "partitions": [
            {"partition_index": i, "current_leader_epoch": -1, "timestamp": -1}
            for i in range(MANY)]}]}
        response, steps = await dispatch_counting_steps(broker.server.router,
                                                        ApiKey.LIST_OFFSETS, 7, body)
    assert steps >= MANY // ITEMS_PER_SLICE - 1
    partitions = response.topics[0].partitions
    assert partitions[0].error_code == ErrorCode.NONE
    assert {p.error_code for p in partitions[1:]} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


async def test_describe_configs_of_many_topics_lets_others_run(tmp_path):
    async with running_broker(tmp_path) as broker:
        body = {"resources": [{"resource_type": 2, "resource_name": f"t{i}",
                               "configuration_keys": None} for i in range(MANY)],
                "include_synonyms": False, "include_documentation": False}
        response, steps = await dispatch_counting_steps(broker.server.router,
                                                        ApiKey.DESCRIBE_CONFIGS, 4, body)
    assert steps >= MANY // ITEMS_PER_SLICE - 1
    assert {r.error_code for r in response.results} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


async def test_describe_configs_refuses_a_resource_named_twice(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("twice", 1)
        broker.create_topic("once", 1)
        body = {"resources": [{"resource_type": 2, "resource_name": name,
                               "configuration_keys": None}
                              for name in ("twice", "once", "twice", "twice")],
                "include_synonyms": True, "include_documentation": True}
        response, _ = await dispatch_counting_steps(broker.server.router,
                                                    ApiKey.DESCRIBE_CONFIGS, 4, body)
    results = response.results
    assert [(r.resource_name, r.error_code) for r in results] == [
        ("twice", ErrorCode.INVALID_REQUEST), ("once", ErrorCode.NONE),
        ("twice", ErrorCode.INVALID_REQUEST), ("twice", ErrorCode.INVALID_REQUEST)]
    assert results[0].error_message == "Duplicate resource." and not results[0].configs
    assert results[1].configs


async def test_offset_fetch_of_many_partitions_lets_others_run(tmp_path):
    async with running_group_broker(tmp_path) as broker:
        await ready(broker)
        body = {"group_id": "g", "topics": [
            {"name": "t", "partition_indexes": list(range(MANY))},
            {"name": "u", "partition_indexes": [0, 1]}], "require_stable": False}
        response, steps = await dispatch_counting_steps(broker.server.router,
                                                        ApiKey.OFFSET_FETCH, 7, body)
    assert steps >= MANY // ITEMS_PER_SLICE - 1
    assert response.error_code == ErrorCode.NONE
    assert [(t.name, len(t.partitions)) for t in response.topics] == [("t", MANY), ("u", 2)]
    assert [p.partition_index for p in response.topics[0].partitions] == list(range(MANY))


async def test_a_topic_of_many_partitions_is_laid_out_while_others_run(tmp_path):
    async with running_broker(tmp_path) as broker:
        topic_id = uuid.uuid4()
        records = [TopicRecord(name="wide", topic_id=topic_id)] + [
            PartitionRecord(partition_id=p, topic_id=topic_id, replicas=(BROKER_ID,),
                            isr=(BROKER_ID,), leader=BROKER_ID, leader_epoch=0,
                            partition_epoch=0) for p in range(40)]
        delta, broker.image = apply_records(broker.image, records)
        steps = 0

        async def other_task() -> None:
            nonlocal steps
            while True:
                await trio.lowlevel.checkpoint()
                steps += 1

        async with trio.open_nursery() as nursery:
            nursery.start_soon(other_task)
            await trio.sleep(0.01)
            before = steps
            await broker.server.replica_manager.on_metadata(delta, broker.image)
            during = steps - before
            nursery.cancel_scope.cancel()
        replicas = broker.server.replica_manager
        assert all(replicas.leader_partition("wide", p).is_leader for p in range(40))
    assert during >= 39


async def test_a_long_request_is_accounted_and_answered_in_steps_of_their_own() -> None:
    """After a request that took long, the router checkpoints before its accounting (which
    walks the whole answer) and before it is encoded. Trio runs the tasks of a round in
    random order, so another task gets in between often, not every time: out of 12 long
    requests, some must show it (each does with a chance of 3/4)."""
    steps = 0
    marks: list[dict[str, int]] = []

    async def slow(request: Any, ctx: Any) -> dict[str, Any]:
        await trio.sleep(LONG_REQUEST_S)
        marks.append({"handled": steps})
        return {"error_code": 0}

    router = RequestRouter()
    router.register(ApiKey.LIST_GROUPS, slow)
    router.observer = lambda request, body, ms: marks[-1].setdefault("accounted", steps)
    request = decode_request(encode_request(ApiKey.LIST_GROUPS, 4, 1, "big", {}))

    async def other_task() -> None:
        nonlocal steps
        while True:
            await trio.lowlevel.checkpoint()
            steps += 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other_task)
        for _ in range(12):
            await router.dispatch(request, CONNECTION)
            marks[-1]["answered"] = steps
        nursery.cancel_scope.cancel()
    assert any(m["handled"] < m["accounted"] for m in marks)
    assert any(m["accounted"] < m["answered"] for m in marks)


def test_offset_fetch_slices_join_to_the_whole_answer() -> None:
    Topic = OffsetFetchRequestData.OffsetFetchRequestTopic
    topics = [Topic(name="a", partition_indexes=list(range(7))),
              Topic(name="b", partition_indexes=[]),
              Topic(name="a", partition_indexes=[9]),
              Topic(name="c", partition_indexes=[1, 2])]
    slices = fetch_slices(topics, 3)
    assert all(sum(max(len(t.partition_indexes), 1) for t in s) <= 3 for s in slices)
    joined = join_topics(t for part in slices for t in fetch_offsets(None, part))
    assert joined == fetch_offsets(None, topics)
    assert [(t.name, [p.partition for p in t.partitions]) for t in joined] == [
        ("a", [0, 1, 2, 3, 4, 5, 6, 9]), ("b", []), ("c", [1, 2])]
