"""QuorumController over real pysyncobj voters and real sockets, driven by KafkaConnection."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import trio

from broker.controller_server import broker_config_validator
from clients.net import KafkaConnection
from clients.protocol import ApiKey, ErrorCode
from metadata.settings import ControllerSettings
from tests.unit.broker.controller_server.support import (
    CLUSTER_ID,
    Quorum,
    Voter,
    connect,
    registration,
    running_quorum,
    wait_until,
)

SETTINGS = ControllerSettings(broker_session_timeout_ms=1500, auto_leader_rebalance_enable=False,
                              validate_broker_config=broker_config_validator())


async def register_and_unfence(conn: KafkaConnection, voter: Voter, broker_id: int) -> int:
    """Register a fake broker and heartbeat it (caught up) until unfenced; return its epoch."""
    response = await conn.request(ApiKey.BROKER_REGISTRATION, registration(broker_id, 9000 + broker_id))
    assert response["error_code"] == ErrorCode.NONE, response
    epoch = response["broker_epoch"]
    heartbeat = await send_heartbeat(conn, voter, broker_id, epoch)
    assert heartbeat["error_code"] == ErrorCode.NONE and not heartbeat["is_fenced"], heartbeat
    return epoch


async def send_heartbeat(conn: KafkaConnection, voter: Voter, broker_id: int, epoch: int,
                         offset: int | None = None) -> dict[str, Any]:
    current = voter.state.applied_offset if offset is None else offset
    return await conn.request(ApiKey.BROKER_HEARTBEAT, {
        "broker_id": broker_id, "broker_epoch": epoch, "current_metadata_offset": current,
        "want_fence": False, "want_shut_down": False})


def create_topics_body(name: str, partitions: int = 1, replication: int = 1) -> dict[str, Any]:
    return {"topics": [{"name": name, "num_partitions": partitions,
                        "replication_factor": replication, "assignments": [], "configs": []}],
            "timeout_ms": 5000, "validate_only": False}


def all_images_have_topic(quorum: Quorum, name: str) -> bool:
    return all(v.state.image.topic(name) is not None for v in quorum.running())


async def test_single_voter_registers_and_unfences_a_caught_up_broker(tmp_path: Path) -> None:
    async with running_quorum(tmp_path, 1, SETTINGS) as quorum:
        leader = await quorum.leader()
        async with connect(leader) as conn:
            response = await conn.request(ApiKey.BROKER_REGISTRATION, registration(100, 9100))
            assert response["error_code"] == ErrorCode.NONE
            epoch = response["broker_epoch"]
            assert leader.state.image.broker(100).fenced
            # Behind its own registration record: stays fenced, not caught up.
            early = await send_heartbeat(conn, leader, 100, epoch, offset=0)
            assert (early["is_caught_up"], early["is_fenced"]) == (False, True)
            late = await send_heartbeat(conn, leader, 100, epoch)
            assert (late["error_code"], late["is_caught_up"], late["is_fenced"]) == (0, True, False)
            assert not leader.state.image.broker(100).fenced
            stale = await send_heartbeat(conn, leader, 100, epoch - 1)
            assert stale["error_code"] == ErrorCode.STALE_BROKER_EPOCH

            # Wrong cluster id is refused before anything is written.
            wrong = registration(101, 9101) | {"cluster_id": "someOtherClusterId0000"}
            response = await conn.request(ApiKey.BROKER_REGISTRATION, wrong)
            assert response["error_code"] == ErrorCode.INCONSISTENT_CLUSTER_ID
            assert leader.state.image.broker(101) is None


async def test_producer_ids_come_in_blocks_of_1000(tmp_path: Path) -> None:
    async with running_quorum(tmp_path, 1, SETTINGS) as quorum:
        leader = await quorum.leader()
        async with connect(leader) as conn:
            epoch = await register_and_unfence(conn, leader, 100)
            blocks = []
            for _ in range(2):
                response = await conn.request(ApiKey.ALLOCATE_PRODUCER_IDS,
                                              {"broker_id": 100, "broker_epoch": epoch})
                assert response["error_code"] == ErrorCode.NONE
                blocks.append((response["producer_id_start"], response["producer_id_len"]))
            assert blocks == [(0, 1000), (1000, 1000)]
            assert leader.state.image.next_producer_id == 2000
            stale = await conn.request(ApiKey.ALLOCATE_PRODUCER_IDS,
                                       {"broker_id": 100, "broker_epoch": epoch + 50})
            assert stale["error_code"] == ErrorCode.STALE_BROKER_EPOCH


async def test_three_voters_only_the_leader_serves_and_every_image_follows(tmp_path: Path) -> None:
    async with running_quorum(tmp_path, 3, SETTINGS) as quorum:
        leader = await quorum.leader()
        follower = quorum.followers()[0]
        async with connect(follower) as conn:
            response = await conn.request(ApiKey.CREATE_TOPICS, create_topics_body("t1"))
            assert [t["error_code"] for t in response["topics"]] == [ErrorCode.NOT_CONTROLLER]
            assert response["topics"][0]["name"] == "t1"
            response = await conn.request(ApiKey.BROKER_REGISTRATION, registration(100, 9100))
            assert response["error_code"] == ErrorCode.NOT_CONTROLLER
            response = await conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, {"resources": [
                {"resource_type": 2, "resource_name": "t1", "configs": []}],
                "validate_only": False})
            assert [r["error_code"] for r in response["responses"]] == [ErrorCode.NOT_CONTROLLER]

        async with connect(leader) as conn:
            await register_and_unfence(conn, leader, 100)
            response = await conn.request(ApiKey.CREATE_TOPICS, create_topics_body("t1", 3))
            result = response["topics"][0]
            assert (result["error_code"], result["num_partitions"]) == (ErrorCode.NONE, 3)
            # Committed before the answer: the leader's image already has it.
            assert leader.state.image.topic("t1").topic_id == result["topic_id"]
            again = await conn.request(ApiKey.CREATE_TOPICS, create_topics_body("t1"))
            assert again["topics"][0]["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS
            response = await conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, {"resources": [
                {"resource_type": 2, "resource_name": "t1", "configs": [
                    {"name": "retention.ms", "config_operation": 0, "value": "60000"}]},
                {"resource_type": 4, "resource_name": "", "configs": [
                    {"name": "no.such.broker.config", "config_operation": 0, "value": "1"}]}],
                "validate_only": False})
            codes = [r["error_code"] for r in response["responses"]]
            assert codes == [ErrorCode.NONE, ErrorCode.INVALID_CONFIG]
        await wait_until(lambda: all_images_have_topic(quorum, "t1"), 10, "t1 on every voter")
        await wait_until(lambda: all(v.state.image.topic_config("t1").get("retention.ms") == "60000"
                                   for v in quorum.running()), 10, "config on every voter")


async def test_silent_broker_is_fenced_and_loses_leadership(tmp_path: Path) -> None:
    async with running_quorum(tmp_path, 3, SETTINGS) as quorum:
        leader = await quorum.leader()
        async with connect(leader) as conn:
            epochs = {b: await register_and_unfence(conn, leader, b) for b in (100, 101)}
            response = await conn.request(ApiKey.CREATE_TOPICS, create_topics_body("t2", 4, 2))
            assert response["topics"][0]["error_code"] == ErrorCode.NONE
            topic = leader.state.image.topic("t2")
            assert {p.leader for p in topic.partitions.values()} == {100, 101}

            async def keep_101_alive() -> None:
                while True:
                    beat = await send_heartbeat(conn, leader, 101, epochs[101])
                    assert beat["error_code"] == ErrorCode.NONE
                    await trio.sleep(0.3)  # the heartbeat period, not a synchronisation

            async with trio.open_nursery() as nursery:
                nursery.start_soon(keep_101_alive)
                await wait_until(lambda: leader.state.image.broker(100).fenced, 10, "100 fenced")
                nursery.cancel_scope.cancel()
            image = leader.state.image
            assert not image.broker(101).fenced
            for part in image.topic("t2").partitions.values():
                assert part.leader == 101 and part.isr == (101,)


async def test_describe_quorum_and_cluster_shapes(tmp_path: Path) -> None:
    async with running_quorum(tmp_path, 3, SETTINGS) as quorum:
        leader = await quorum.leader()
        await wait_until(lambda: all(v.quorum.status().leader_id == leader.node_id
                                   for v in quorum.running()), 10, "every voter knows the leader")
        body = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}
        async with connect(leader) as conn:
            for version in (0, 1, 2):
                response = await conn.request(ApiKey.DESCRIBE_QUORUM, body, version=version)
                assert response["error_code"] == ErrorCode.NONE
                (topic,) = response["topics"]
                (partition,) = topic["partitions"]
                assert topic["topic_name"] == "__cluster_metadata"
                assert partition["error_code"] == ErrorCode.NONE
                assert partition["leader_id"] == leader.node_id
                assert partition["leader_epoch"] == leader.quorum.status().epoch
                assert partition["high_watermark"] > 0
                voters = {v["replica_id"]: v for v in partition["current_voters"]}
                assert set(voters) == {1, 2, 3}
                assert voters[leader.node_id]["log_end_offset"] >= partition["high_watermark"]
                if version >= 1:
                    assert voters[leader.node_id]["last_fetch_timestamp"] > 0
                    assert voters[leader.node_id]["last_caught_up_timestamp"] > 0
                if version >= 2:
                    nodes = {n["node_id"]: n["listeners"] for n in response["nodes"]}
                    assert set(nodes) == {1, 2, 3}
                    assert nodes[leader.node_id] == [{"name": "CONTROLLER", "host": "127.0.0.1",
                                                      "port": leader.address[1]}]
            wrong = await conn.request(ApiKey.DESCRIBE_QUORUM, {"topics": [
                {"topic_name": "orders", "partitions": [{"partition_index": 0}]}]})
            assert wrong["error_code"] == ErrorCode.INVALID_REQUEST

            cluster = await conn.request(ApiKey.DESCRIBE_CLUSTER, {
                "include_cluster_authorized_operations": False, "endpoint_type": 2}, version=1)
            assert (cluster["error_code"], cluster["cluster_id"]) == (ErrorCode.NONE, CLUSTER_ID)
            assert cluster["controller_id"] == leader.node_id
            assert sorted(b["broker_id"] for b in cluster["brokers"]) == [1, 2, 3]
            mismatched = await conn.request(ApiKey.DESCRIBE_CLUSTER, {
                "include_cluster_authorized_operations": False, "endpoint_type": 1}, version=1)
            assert mismatched["error_code"] == ErrorCode.MISMATCHED_ENDPOINT_TYPE

        # A follower names the leader so clients can find it.
        async with connect(quorum.followers()[0]) as conn:
            response = await conn.request(ApiKey.DESCRIBE_QUORUM, body)
            partition = response["topics"][0]["partitions"][0]
            assert (partition["error_code"], partition["leader_id"]) == (0, leader.node_id)


async def test_leader_loss_moves_the_controller(tmp_path: Path) -> None:
    async with running_quorum(tmp_path, 3, SETTINGS) as quorum:
        old = await quorum.leader()
        async with connect(old) as conn:
            epoch = await register_and_unfence(conn, old, 100)
            # The old controller's node is a broker too (a combined node).
            await register_and_unfence(conn, old, old.node_id)
            response = await conn.request(ApiKey.CREATE_TOPICS, create_topics_body("before"))
            assert response["topics"][0]["error_code"] == ErrorCode.NONE
        await wait_until(lambda: all_images_have_topic(quorum, "before"), 10, "topic replicated")
        await quorum.stop(old.node_id)
        stopped_ms = time.time() * 1000

        new = await quorum.leader()
        assert new.node_id != old.node_id
        await wait_until(lambda: new.controller.is_active, 5, "new controller active")
        # Every broker's session starts afresh, but the old controller's: it was last
        # heard from when it stopped, so its session started then.
        assert new.controller.tracker.last_contact_ms(100) >= stopped_ms
        assert new.controller.tracker.last_contact_ms(old.node_id) <= stopped_ms
        async with connect(new) as conn:
            # The new controller gave the broker a fresh session instead of fencing it.
            beat = await send_heartbeat(conn, new, 100, epoch)
            assert (beat["error_code"], beat["is_fenced"]) == (ErrorCode.NONE, False)
            response = await conn.request(ApiKey.CREATE_TOPICS, create_topics_body("after"))
            assert response["topics"][0]["error_code"] == ErrorCode.NONE
            response = await conn.request(ApiKey.CREATE_TOPICS, create_topics_body("before"))
            assert response["topics"][0]["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS
        await wait_until(lambda: all_images_have_topic(quorum, "after"), 10, "topic on survivors")


async def test_isr_expansion_then_preferred_leader_comes_back(tmp_path: Path) -> None:
    settings = ControllerSettings(broker_session_timeout_ms=5000, auto_leader_rebalance_enable=True,
                                  leader_imbalance_check_interval_seconds=1)
    async with running_quorum(tmp_path, 1, settings) as quorum:
        leader = await quorum.leader()
        async with connect(leader) as conn:
            epochs = {b: await register_and_unfence(conn, leader, b) for b in (100, 101)}
            body = create_topics_body("t3", -1, -1)
            body["topics"][0]["assignments"] = [{"partition_index": 0, "broker_ids": [100, 101]}]
            response = await conn.request(ApiKey.CREATE_TOPICS, body)
            assert response["topics"][0]["error_code"] == ErrorCode.NONE
            topic = leader.state.image.topic("t3")

            # Broker 100 asks to be fenced: leadership and ISR membership move to 101.
            fence = await conn.request(ApiKey.BROKER_HEARTBEAT, {
                "broker_id": 100, "broker_epoch": epochs[100],
                "current_metadata_offset": leader.state.applied_offset, "want_fence": True,
                "want_shut_down": False})
            assert (fence["error_code"], fence["is_fenced"]) == (ErrorCode.NONE, True)
            part = leader.state.image.partition(topic.topic_id, 0)
            assert (part.leader, part.isr) == (101, (101,))
            beat = await send_heartbeat(conn, leader, 100, epochs[100])
            assert not beat["is_fenced"]

            # The leader (101) takes 100 back into the ISR.
            response = await conn.request(ApiKey.ALTER_PARTITION, {
                "broker_id": 101, "broker_epoch": epochs[101], "topics": [{
                    "topic_id": topic.topic_id, "partitions": [{
                        "partition_index": 0, "leader_epoch": part.leader_epoch,
                        "new_isr_with_epochs": [{"broker_id": 101, "broker_epoch": epochs[101]},
                                                {"broker_id": 100, "broker_epoch": epochs[100]}],
                        "leader_recovery_state": 0, "partition_epoch": part.partition_epoch}]}]})
            result = response["topics"][0]["partitions"][0]
            assert (response["error_code"], result["error_code"]) == (0, 0), response
            assert sorted(result["isr"]) == [100, 101]

            # The periodic preferred-leader election hands leadership back to 100.
            await wait_until(lambda: leader.state.image.partition(topic.topic_id, 0).leader == 100,
                           10, "preferred leader 100 restored")


async def test_lost_majority_times_out_then_answers_not_controller(tmp_path: Path) -> None:
    async with running_quorum(tmp_path, 3, SETTINGS, append_timeout_ms=600) as quorum:
        leader = await quorum.leader()
        async with connect(leader) as conn:
            epoch = await register_and_unfence(conn, leader, 100)
            for follower in quorum.followers():
                await quorum.stop(follower.node_id)
            # Nothing it decides commits: it times out, or, once it has heard from no
            # majority for half an election timeout, it no longer decides.
            response = await conn.request(ApiKey.CREATE_TOPICS, create_topics_body("stuck"))
            assert response["topics"][0]["error_code"] in (ErrorCode.REQUEST_TIMED_OUT,
                                                           ErrorCode.NOT_CONTROLLER)
            assert leader.state.image.topic("stuck") is None
            # Still the Raft leader (it steps down after 1.5 x the fetch timeout), but
            # without a recent majority it answers no broker heartbeat either.
            await wait_until(
                lambda: not leader.controller.has_majority_contact(leader.quorum.status()), 5,
                "the majority contact to age")
            assert leader.quorum.status().is_leader
            beat = await send_heartbeat(conn, leader, 100, epoch)
            assert beat["error_code"] == ErrorCode.NOT_CONTROLLER

            await wait_until(lambda: not leader.quorum.status().is_leader, 10, "leader steps down")
            response = await conn.request(ApiKey.CREATE_TOPICS, create_topics_body("later"))
            assert response["topics"][0]["error_code"] == ErrorCode.NOT_CONTROLLER
            assert not leader.controller.is_active
