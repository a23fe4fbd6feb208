"""The group APIs' version rules and error codes on a real socket, against one in-process
broker whose `__consumer_offsets` lives in real partition logs."""

from __future__ import annotations

from typing import Any

import trio

from broker.group.records import GroupKey, iter_entries
from broker.group.routing import CONSUMER_OFFSETS_TOPIC
from clients.net import KafkaConnection
from clients.protocol import ApiKey, ErrorCode
from metadata.delta import apply_records
from metadata.records import PartitionChangeRecord
from tests.unit.broker.group.harness import BROKER_ID, GroupBroker, running_group_broker
from tests.unit.broker.group.test_coordinator_clients import ready

PROTOCOLS = [{"name": "range", "metadata": b"sub"}]
ASSIGNMENT = b"assignment-of-the-leader"


def join_body(group: str, member_id: str = "", instance: str | None = None,
              protocols: list[dict[str, Any]] = PROTOCOLS,
              protocol_type: str = "consumer") -> dict[str, Any]:
    return {"group_id": group, "session_timeout_ms": 6000, "rebalance_timeout_ms": 6000,
            "member_id": member_id, "group_instance_id": instance,
            "protocol_type": protocol_type, "protocols": protocols}


async def join_and_sync(conn: KafkaConnection, group: str,
                        instance: str | None = None) -> tuple[str, int]:
    """A lone member through MEMBER_ID_REQUIRED, JoinGroup and SyncGroup (v9/v5): the group
    ends Stable with this member as leader. Returns (member id, generation)."""
    joined = await conn.request(ApiKey.JOIN_GROUP, join_body(group, instance=instance), 9)
    if joined["error_code"] == ErrorCode.MEMBER_ID_REQUIRED:
        joined = await conn.request(ApiKey.JOIN_GROUP,
                                    join_body(group, joined["member_id"], instance), 9)
    assert joined["error_code"] == 0, joined
    member, generation = joined["member_id"], joined["generation_id"]
    synced = await conn.request(ApiKey.SYNC_GROUP, {
        "group_id": group, "generation_id": generation, "member_id": member,
        "group_instance_id": instance, "protocol_type": "consumer", "protocol_name": "range",
        "assignments": [{"member_id": member, "assignment": ASSIGNMENT}]}, 5)
    assert (synced["error_code"], synced["assignment"]) == (0, ASSIGNMENT)
    return member, generation


def commit_body(group: str, offset: int, metadata: str = "", *, generation: int = -1,
                member: str = "", partitions: int = 1) -> dict[str, Any]:
    return {"group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
            "topics": [{"name": "t", "partitions": [
                {"partition_index": p, "committed_offset": offset + p,
                 "committed_leader_epoch": -1, "committed_metadata": metadata}
                for p in range(partitions)]}]}


def commit_codes(response: dict[str, Any]) -> list[int]:
    return [p["error_code"] for t in response["topics"] for p in t["partitions"]]


async def started(broker: GroupBroker) -> KafkaConnection:
    await ready(broker)
    await broker.create_topic("t", 2)
    return await broker.connect()


async def test_join_group_v4_requires_a_member_id_and_v3_admits_directly(tmp_path):
    async with running_group_broker(tmp_path) as broker:
        conn = await started(broker)
        first = await conn.request(ApiKey.JOIN_GROUP, join_body("v4"), 4)
        assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
        assert first["member_id"] and first["generation_id"] == -1
        second = await conn.request(ApiKey.JOIN_GROUP, join_body("v4", first["member_id"]), 4)
        assert (second["error_code"], second["member_id"]) == (0, first["member_id"])
        assert second["leader"] == first["member_id"] and second["generation_id"] == 1
        old = await conn.request(ApiKey.JOIN_GROUP, join_body("v3"), 3)
        assert old["error_code"] == 0 and old["member_id"] and old["leader"] == old["member_id"]
        await conn.aclose()


async def test_join_without_a_shared_protocol_is_inconsistent(tmp_path):
    async with running_group_broker(tmp_path) as broker:
        conn = await started(broker)
        await join_and_sync(conn, "proto")
        other = await broker.connect()
        no_common = await other.request(ApiKey.JOIN_GROUP, join_body(
            "proto", protocols=[{"name": "roundrobin", "metadata": b""}]), 5)
        assert no_common["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        wrong_type = await other.request(ApiKey.JOIN_GROUP, join_body(
            "proto", protocol_type="connect"), 5)
        assert wrong_type["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        await other.aclose()
        await conn.aclose()


async def test_static_member_rejoining_fences_its_old_member_id(tmp_path):
    async with running_group_broker(tmp_path) as broker:
        conn = await started(broker)
        old_id, generation = await join_and_sync(conn, "static", instance="i-1")
        rejoined = await conn.request(ApiKey.JOIN_GROUP, join_body("static", instance="i-1"), 9)
        new_id = rejoined["member_id"]
        assert rejoined["error_code"] == 0 and new_id != old_id
        # Same protocols, group Stable: no rebalance, the generation stays.
        assert rejoined["generation_id"] == generation
        fenced = await conn.request(ApiKey.HEARTBEAT, {
            "group_id": "static", "generation_id": generation, "member_id": old_id,
            "group_instance_id": "i-1"}, 4)
        assert fenced["error_code"] == ErrorCode.FENCED_INSTANCE_ID
        fine = await conn.request(ApiKey.HEARTBEAT, {
            "group_id": "static", "generation_id": generation, "member_id": new_id,
            "group_instance_id": "i-1"}, 4)
        assert fine["error_code"] == 0
        await conn.aclose()


async def test_sync_group_answers_only_once_the_assignment_is_in_the_log(tmp_path):
    async with running_group_broker(tmp_path) as broker:
        conn = await started(broker)
        member, generation = await join_and_sync(conn, "synced")
        partition = broker.coordinator.engine.partition_for("synced")
        log = broker.coordinator._log
        stored = [value for chunk in log.read_from(partition, log.log_start_offset(partition))
                  for _, key, value in iter_entries(chunk) if key == GroupKey("synced")]
        assert stored[-1].generation == generation
        assert [(m.member_id, m.assignment) for m in stored[-1].members] == [(member, ASSIGNMENT)]
        await conn.aclose()


async def test_offset_commit_standalone_form_and_metadata_limit(tmp_path):
    async with running_group_broker(tmp_path) as broker:
        conn = await started(broker)
        # assign() users: generation -1, no member id, no JoinGroup.
        ok = await conn.request(ApiKey.OFFSET_COMMIT, commit_body("solo", 5, "m" * 4096), 8)
        assert commit_codes(ok) == [0]
        too_big = await conn.request(ApiKey.OFFSET_COMMIT, commit_body("solo", 9, "m" * 4097), 8)
        assert commit_codes(too_big) == [ErrorCode.OFFSET_METADATA_TOO_LARGE]
        fetched = await conn.request(ApiKey.OFFSET_FETCH, {
            "group_id": "solo", "topics": [{"name": "t", "partition_indexes": [0]}]}, 7)
        assert fetched["topics"][0]["partitions"][0]["committed_offset"] == 5
        # A group with members only takes commits from them, for their generation.
        member, generation = await join_and_sync(conn, "members")
        refused = await conn.request(ApiKey.OFFSET_COMMIT, commit_body("members", 1), 8)
        assert commit_codes(refused) == [ErrorCode.UNKNOWN_MEMBER_ID]
        stale = await conn.request(ApiKey.OFFSET_COMMIT, commit_body(
            "members", 1, generation=generation + 1, member=member), 8)
        assert commit_codes(stale) == [ErrorCode.ILLEGAL_GENERATION]
        good = await conn.request(ApiKey.OFFSET_COMMIT, commit_body(
            "members", 1, generation=generation, member=member), 8)
        assert commit_codes(good) == [0]
        await conn.aclose()


async def test_offset_fetch_many_groups_at_once_with_require_stable(tmp_path):
    async with running_group_broker(tmp_path) as broker:
        conn = await started(broker)
        for group, offset in (("a", 10), ("b", 20)):
            response = await conn.request(ApiKey.OFFSET_COMMIT,
                                          commit_body(group, offset, partitions=2), 8)
            assert commit_codes(response) == [0, 0]
        fetched = await conn.request(ApiKey.OFFSET_FETCH, {"require_stable": True, "groups": [
            {"group_id": "a", "topics": [{"name": "t", "partition_indexes": [0, 1]}]},
            {"group_id": "b", "topics": None},
            {"group_id": "unknown", "topics": [{"name": "t", "partition_indexes": [0]}]}]}, 8)
        by_group = {g["group_id"]: (g["error_code"], [
            (t["name"], p["partition_index"], p["committed_offset"], p["error_code"])
            for t in g["topics"] for p in t["partitions"]]) for g in fetched["groups"]}
        assert by_group == {"a": (0, [("t", 0, 10, 0), ("t", 1, 11, 0)]),
                            "b": (0, [("t", 0, 20, 0), ("t", 1, 21, 0)]),
                            "unknown": (0, [("t", 0, -1, 0)])}
        await conn.aclose()


async def test_require_stable_reports_a_commit_still_waiting_for_its_replicas(tmp_path):
    async with running_group_broker(tmp_path) as broker:
        conn = await started(broker)
        assert commit_codes(await conn.request(ApiKey.OFFSET_COMMIT,
                                               commit_body("g", 5, partitions=2), 8)) == [0, 0]
        partition = broker.coordinator.engine.partition_for("g")

        async def set_replicas(replicas: tuple[int, ...], isr: tuple[int, ...]) -> None:
            await broker.publish([PartitionChangeRecord(
                partition_id=partition, topic_id=broker.topic_ids[CONSUMER_OFFSETS_TOPIC],
                replicas=replicas, isr=isr)])

        # A second replica joins the ISR and never fetches: a commit (acks=all) cannot
        # complete until the ISR shrinks back to this broker.
        await set_replicas((BROKER_ID, 2), (BROKER_ID, 2))
        wanted = [{"name": "t", "partition_indexes": [0, 1]}]

        async def fetch(version: int, require_stable: bool) -> list[tuple[int, int, int]]:
            if version >= 8:
                response = await conn.request(ApiKey.OFFSET_FETCH, {
                    "require_stable": require_stable,
                    "groups": [{"group_id": "g", "topics": wanted}]}, version)
                [group] = response["groups"]
                assert group["error_code"] == 0
                topics = group["topics"]
            else:
                response = await conn.request(ApiKey.OFFSET_FETCH, {
                    "group_id": "g", "topics": wanted, "require_stable": require_stable},
                    version)
                assert response["error_code"] == 0
                topics = response["topics"]
            return [(p["partition_index"], p["committed_offset"], p["error_code"])
                    for t in topics for p in t["partitions"]]

        codes: list[int] = []

        async def commit_in_flight() -> None:
            other = await broker.connect()
            codes.extend(commit_codes(await other.request(ApiKey.OFFSET_COMMIT,
                                                          commit_body("g", 9), 8)))
            await other.aclose()

        unstable = [(0, -1, ErrorCode.UNSTABLE_OFFSET_COMMIT), (1, 6, 0)]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(commit_in_flight)
            with trio.fail_after(5):
                while await fetch(7, True) != unstable:
                    await trio.sleep(0.01)
            assert await fetch(8, True) == unstable
            # Without require_stable the last committed offset is answered.
            assert await fetch(7, False) == await fetch(8, False) == [(0, 5, 0), (1, 6, 0)]
            assert codes == []  # still waiting for the second replica
            await set_replicas((BROKER_ID,), (BROKER_ID,))
        assert codes == [0]
        for version in (7, 8):
            assert await fetch(version, True) == [(0, 9, 0), (1, 6, 0)]
        await conn.aclose()


async def test_list_groups_filters_by_state_and_delete_refuses_a_group_with_members(tmp_path):
    async with running_group_broker(tmp_path) as broker:
        conn = await started(broker)
        await join_and_sync(conn, "busy")
        assert commit_codes(await conn.request(ApiKey.OFFSET_COMMIT,
                                               commit_body("idle", 1), 8)) == [0]

        async def listed(states: list[str]) -> list[tuple[str, str]]:
            response = await conn.request(ApiKey.LIST_GROUPS, {"states_filter": states}, 4)
            assert response["error_code"] == 0
            return sorted((g["group_id"], g["group_state"]) for g in response["groups"])

        assert await listed([]) == [("busy", "Stable"), ("idle", "Empty")]
        assert await listed(["Stable"]) == [("busy", "Stable")]
        assert await listed(["empty", "Dead"]) == [("idle", "Empty")]
        deleted = await conn.request(ApiKey.DELETE_GROUPS,
                                     {"groups_names": ["busy", "idle", "never"]}, 2)
        assert [(r["group_id"], r["error_code"]) for r in deleted["results"]] == [
            ("busy", ErrorCode.NON_EMPTY_GROUP), ("idle", 0),
            ("never", ErrorCode.GROUP_ID_NOT_FOUND)]
        assert await listed([]) == [("busy", "Stable")]
        await conn.aclose()


async def test_leave_group_batched_by_instance_id(tmp_path):
    async with running_group_broker(tmp_path) as broker:
        conn = await started(broker)
        member, _ = await join_and_sync(conn, "leave", instance="i-1")
        left = await conn.request(ApiKey.LEAVE_GROUP, {"group_id": "leave", "members": [
            {"member_id": "", "group_instance_id": "i-1"},
            {"member_id": "", "group_instance_id": "i-unknown"}]}, 5)
        assert left["error_code"] == 0
        assert [(m["group_instance_id"], m["error_code"]) for m in left["members"]] == [
            ("i-1", 0), ("i-unknown", ErrorCode.UNKNOWN_MEMBER_ID)]
        described = await conn.request(ApiKey.DESCRIBE_GROUPS, {"groups": ["leave"]}, 5)
        assert (described["groups"][0]["group_state"], described["groups"][0]["members"]) == (
            "Empty", [])
        await conn.aclose()


async def test_coordinator_load_in_progress_until_the_partition_is_loaded(tmp_path):
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("t", 1)
        records = broker.topic_records(CONSUMER_OFFSETS_TOPIC,
                                       broker.coordinator.settings.num_partitions)
        delta, broker.image = apply_records(broker.image, records)
        # The coordinator hears of its leadership before the replica manager has the
        # partitions, so loading cannot finish yet.
        await broker.coordinator.on_metadata(delta, broker.image)
        conn = await broker.connect()
        joined = await conn.request(ApiKey.JOIN_GROUP, join_body("g"), 9)
        assert joined["error_code"] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        committed = await conn.request(ApiKey.OFFSET_COMMIT, commit_body("g", 1), 8)
        assert commit_codes(committed) == [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]
        listed = await conn.request(ApiKey.LIST_GROUPS, {"states_filter": []}, 4)
        assert listed["error_code"] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        broker.server.replica_manager.on_metadata_update(delta, broker.image)
        await broker.wait_loaded()
        joined = await conn.request(ApiKey.JOIN_GROUP, join_body("g"), 9)
        assert joined["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
        with trio.fail_after(5):
            assert commit_codes(await conn.request(ApiKey.OFFSET_COMMIT,
                                                   commit_body("g", 1), 8)) == [0]
        await conn.aclose()


async def test_offset_commits_leave_the_group_timer_asleep(tmp_path):
    """A commit only pushes a session deadline later: it must not make the timer look at
    every group again (twice a commit, which cost each commit the time of all groups)."""
    async with running_group_broker(tmp_path) as broker:
        conn = await started(broker)
        engine = broker.coordinator.engine
        for group in range(50):
            assert commit_codes(await conn.request(ApiKey.OFFSET_COMMIT,
                                                   commit_body(f"other{group}", 1), 8)) == [0]
        ticks = 0
        tick = engine.tick

        def counted(now_ms: int):  # type: ignore[no-untyped-def]
            nonlocal ticks
            ticks += 1
            return tick(now_ms)

        engine.tick = counted  # type: ignore[method-assign]
        for offset in range(20):
            assert commit_codes(await conn.request(ApiKey.OFFSET_COMMIT,
                                                   commit_body("g", offset), 8)) == [0]
        assert ticks == 0
        fetched = await conn.request(ApiKey.OFFSET_FETCH, {
            "group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}]}, 7)
        assert fetched["topics"][0]["partitions"][0]["committed_offset"] == 19
        await conn.aclose()
