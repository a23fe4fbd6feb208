"""ListOffsets, OffsetForLeaderEpoch and DeleteRecords over a real socket."""

from __future__ import annotations

from clients.protocol import ApiKey, ErrorCode
from tests.unit.broker.apis.batches import batch, now_ms, only_partition, produce_body
from tests.unit.broker.apis.harness import running_broker


def list_offsets_body(topic: str, timestamp: int, *, partition: int = 0,
                      isolation_level: int = 0, **fields: int) -> dict:
    return {"replica_id": -1, "isolation_level": isolation_level, "topics": [
        {"name": topic, "partitions": [{"partition_index": partition, "timestamp": timestamp,
                                        **fields}]}]}


async def list_offset(conn, topic, timestamp, version=None, **kw):  # type: ignore[no-untyped-def]
    response = await conn.request(ApiKey.LIST_OFFSETS, list_offsets_body(topic, timestamp, **kw), version)
    return only_partition(response, "topics", "partitions")


async def produce_at(conn, topic: str, timestamps: list[int]) -> None:  # type: ignore[no-untyped-def]
    for ts in timestamps:
        response = await conn.request(ApiKey.PRODUCE, produce_body(topic, batch([b"v"], timestamp=ts)))
        assert only_partition(response)["error_code"] == 0


async def test_earliest_latest_max_and_by_timestamp(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        conn = await broker.connect()
        base = now_ms() - 10_000
        await produce_at(conn, "t", [base, base + 3000, base + 1000])
        latest = await list_offset(conn, "t", -1)
        assert (latest["error_code"], latest["offset"], latest["timestamp"], latest["leader_epoch"]) == (0, 3, -1, 0)
        assert (await list_offset(conn, "t", -2))["offset"] == 0
        max_ts = await list_offset(conn, "t", -3, 7)
        assert (max_ts["timestamp"], max_ts["offset"]) == (base + 3000, 1)
        by_time = await list_offset(conn, "t", base + 500)
        assert (by_time["timestamp"], by_time["offset"]) == (base + 3000, 1)
        beyond = await list_offset(conn, "t", base + 60_000)
        assert (beyond["error_code"], beyond["offset"], beyond["timestamp"]) == (0, -1, -1)
        assert (await list_offset(conn, "t", -3, 6))["error_code"] == ErrorCode.UNSUPPORTED_VERSION
        await conn.aclose()


async def test_list_offsets_leader_checks(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("away", leader=2, replicas=(2,))
        broker.create_topic("t")
        conn = await broker.connect()
        assert (await list_offset(conn, "away", -1))["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (await list_offset(conn, "gone", -1))["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert (await list_offset(conn, "t", -1, current_leader_epoch=3))["error_code"] == \
            ErrorCode.UNKNOWN_LEADER_EPOCH
        await conn.aclose()


async def test_latest_for_consumers_is_the_high_watermark(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t", replicas=(1, 2))
        conn = await broker.connect()
        await conn.request(ApiKey.PRODUCE, produce_body("t", batch([b"a"]), acks=1))
        assert (await list_offset(conn, "t", -1))["offset"] == 0
        replica = await conn.request(ApiKey.LIST_OFFSETS, {**list_offsets_body("t", -1), "replica_id": 2})
        assert only_partition(replica, "topics", "partitions")["offset"] == 1
        # The record with the max timestamp is above the HW: a consumer gets no answer.
        max_ts = await list_offset(conn, "t", -3)
        assert (max_ts["error_code"], max_ts["offset"], max_ts["timestamp"]) == (0, -1, -1)
        replica = await conn.request(ApiKey.LIST_OFFSETS, {**list_offsets_body("t", -3), "replica_id": 2})
        assert only_partition(replica, "topics", "partitions")["offset"] == 0
        await conn.aclose()


async def test_offset_for_leader_epoch(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        conn = await broker.connect()
        await produce_at(conn, "t", [now_ms(), now_ms()])
        broker.change_leader("t", 0, 1)  # epoch 1 from offset 2
        await produce_at(conn, "t", [now_ms()])

        async def ask(epoch: int, current: int = -1) -> dict:
            body = {"replica_id": -1, "topics": [{"topic": "t", "partitions": [
                {"partition": 0, "current_leader_epoch": current, "leader_epoch": epoch}]}]}
            return only_partition(await conn.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, body),
                                  "topics", "partitions")

        assert ((await ask(0))["leader_epoch"], (await ask(0))["end_offset"]) == (0, 2)
        assert ((await ask(1))["leader_epoch"], (await ask(1))["end_offset"]) == (1, 3)
        assert (await ask(1, current=0))["error_code"] == ErrorCode.FENCED_LEADER_EPOCH
        await conn.aclose()


async def test_delete_records_moves_the_log_start(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        broker.create_topic("compacted", configs={"cleanup.policy": "compact"})
        conn = await broker.connect()
        await produce_at(conn, "t", [now_ms()] * 4)

        async def delete(topic: str, offset: int) -> dict:
            body = {"timeout_ms": 1000, "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "offset": offset}]}]}
            return only_partition(await conn.request(ApiKey.DELETE_RECORDS, body), "topics", "partitions")

        done = await delete("t", 2)
        assert (done["error_code"], done["low_watermark"]) == (0, 2)
        assert broker.log("t").log_start_offset == 2
        assert (await delete("t", 9))["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
        assert (await delete("t", -1))["low_watermark"] == 4
        assert (await delete("compacted", 0))["error_code"] == ErrorCode.POLICY_VIOLATION
        assert (await list_offset(conn, "t", -2))["offset"] == 4
        await conn.aclose()
