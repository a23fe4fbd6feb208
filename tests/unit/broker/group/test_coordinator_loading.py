"""Loading `__consumer_offsets` partitions from real partition logs: unreadable records,
reads that keep failing, and large partitions loaded without stalling the broker."""

from __future__ import annotations

import logging

import trio

from broker.coordinator.loader import LoadSettings
from broker.group.records import OffsetKey, encode_key
from broker.group.routing import CONSUMER_OFFSETS_TOPIC
from clients.net import KafkaConnection
from clients.protocol import ApiKey, ErrorCode
from clients.records.batch import Record, encode_batch
from metadata.delta import apply_records
from tests.unit.broker.group.harness import BROKER_ID, GroupBroker, running_group_broker
from tests.unit.broker.group.test_group_apis_wire import (commit_body, commit_codes, join_body,
    started)


async def reload(broker: GroupBroker, partition: int) -> None:
    """Move the partition's leadership away and back: the coordinator loads it again."""
    await broker.move_leader(CONSUMER_OFFSETS_TOPIC, partition, 2)
    await broker.move_leader(CONSUMER_OFFSETS_TOPIC, partition, BROKER_ID)
    await broker.wait_loaded()


async def fetched(conn: KafkaConnection, group: str, partitions: list[int]) -> list[int]:
    response = await conn.request(ApiKey.OFFSET_FETCH, {
        "group_id": group, "topics": [{"name": "t", "partition_indexes": partitions}]}, 7)
    assert response["error_code"] == 0
    return [p["committed_offset"] for t in response["topics"] for p in t["partitions"]]


async def test_unreadable_records_are_logged_and_skipped_and_the_rest_loads(tmp_path, caplog):
    async with running_group_broker(tmp_path) as broker:
        conn = await started(broker)
        partition = broker.coordinator.engine.partition_for("g")
        log = broker.coordinator._log
        assert commit_codes(await conn.request(ApiKey.OFFSET_COMMIT, commit_body("g", 5), 8)) == [0]
        # Records this code cannot read: a key that is not msgpack, and a value of an
        # unknown shape (as a newer or broken writer could leave).
        await log.append(partition, encode_batch([
            Record(None, 0, b"\xc1", b"x"),
            Record(None, 0, encode_key(OffsetKey("g", "t", 0)), b"\x93\x09\x01\x02")]))
        second = commit_body("g", 7)
        second["topics"][0]["partitions"][0]["partition_index"] = 1
        assert commit_codes(await conn.request(ApiKey.OFFSET_COMMIT, second, 8)) == [0]
        # The last commit's batch is damaged on disk: its CRC no longer matches.
        assert commit_codes(await conn.request(ApiKey.OFFSET_COMMIT, commit_body("g", 6), 8)) \
            == [0]
        [segment] = (tmp_path / "logs" / f"{CONSUMER_OFFSETS_TOPIC}-{partition}").glob("*.log")
        with open(segment, "r+b") as file:
            file.seek(-1, 2)
            last = file.read(1)
            file.seek(-1, 2)
            file.write(bytes([last[0] ^ 0xFF]))

        with caplog.at_level(logging.ERROR, logger="broker.coordinator.loader"):
            await reload(broker, partition)
        # The partition serves; what was readable is there, the damaged commit is not.
        assert await fetched(conn, "g", [0, 1]) == [5, 7]
        skipped = [r.getMessage() for r in caplog.records if "skipping" in r.getMessage()]
        prefix = f"__consumer_offsets-{partition}: skipping the unreadable record at offset"
        assert [m.split(":")[1].split()[-1] for m in skipped] == ["1", "2", "4"]
        assert all(m.startswith(prefix) for m in skipped)
        assert "CRC" in skipped[2]
        assert "3 unreadable record(s) skipped" in caplog.text
        await conn.aclose()


async def test_a_load_that_gave_up_starts_over_on_its_own(tmp_path, caplog):
    async with running_group_broker(tmp_path) as broker:
        broker.coordinator.runtime.load_settings = LoadSettings(
            retry_s=0.01, max_retry_s=0.02, attempts=3, give_up_s=0.3)
        await broker.create_topic("t", 1)
        delta, broker.image = apply_records(broker.image, broker.topic_records(
            CONSUMER_OFFSETS_TOPIC, broker.coordinator.settings.num_partitions))
        conn = await broker.connect()

        async def join_code() -> int:
            return (await conn.request(ApiKey.JOIN_GROUP, join_body("g"), 9))["error_code"]

        with caplog.at_level(logging.ERROR, logger="broker.coordinator.runtime"):
            # Only the coordinator hears of its leadership: the replica manager does not
            # lead the partitions, so every read fails until the load gives up.
            await broker.coordinator.on_metadata(delta, broker.image)
            with trio.fail_after(5):
                while await join_code() != ErrorCode.COORDINATOR_NOT_AVAILABLE:
                    await trio.sleep(0.01)
        assert "gave up loading after 3 attempts" in caplog.text
        # The replica manager catches up, and no metadata change reaches the coordinator:
        # the load starts over by itself and the groups become available.
        broker.server.replica_manager.on_metadata_update(delta, broker.image)
        with trio.fail_after(5):
            while (code := await join_code()) != ErrorCode.MEMBER_ID_REQUIRED:
                assert code in (ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
                await trio.sleep(0.01)
        await conn.aclose()


async def test_loading_a_large_partition_lets_other_tasks_run(tmp_path):
    async with running_group_broker(tmp_path) as broker:
        conn = await started(broker)
        partition = broker.coordinator.engine.partition_for("g")
        many = commit_body("g", 0, partitions=300)
        assert set(commit_codes(await conn.request(ApiKey.OFFSET_COMMIT, many, 8))) == {0}
        broker.coordinator.runtime.load_settings = LoadSettings(records_per_yield=10)
        await broker.move_leader(CONSUMER_OFFSETS_TOPIC, partition, 2)
        await broker.move_leader(CONSUMER_OFFSETS_TOPIC, partition, BROKER_ID)
        turns = 0
        with trio.fail_after(5):
            while broker.coordinator.is_loading:
                turns += 1
                await trio.sleep(0)
        # 300 records, a checkpoint every 10: this task ran in between, many times.
        assert turns >= 20
        assert await fetched(conn, "g", [0, 299]) == [0, 299]
        await conn.aclose()
