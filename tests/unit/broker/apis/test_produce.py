"""Produce over a real socket: offsets, acks, and each per-partition error code."""

from __future__ import annotations

import pytest
import trio

from clients.net import KafkaConnectionError
from clients.protocol import ApiKey, ErrorCode
from clients.records.header import iter_batches
from metadata.records import PartitionChangeRecord
from tests.unit.broker.apis.batches import batch, now_ms, only_partition, produce_body, values_of
from tests.unit.broker.apis.harness import running_broker


async def produce(conn, body, version=None):  # type: ignore[no-untyped-def]
    return only_partition(await conn.request(ApiKey.PRODUCE, body, version))


async def test_produce_assigns_consecutive_offsets_and_reports_log_start(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        conn = await broker.connect()
        first = await produce(conn, produce_body("t", batch([b"a", b"b", b"c"])))
        second = await produce(conn, produce_body("t", batch([b"d"]), acks=1))
        assert (first["error_code"], first["base_offset"], first["log_start_offset"]) == (0, 0, 0)
        assert (second["error_code"], second["base_offset"]) == (0, 3)
        assert first["log_append_time_ms"] == -1
        log = broker.log("t")
        assert (log.log_end_offset, log.high_watermark) == (4, 4)
        assert values_of(log.read_bytes(0, 1 << 20)) == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d")]
        await conn.aclose()


async def test_acks_zero_sends_no_response_but_appends(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        conn = await broker.connect()
        assert await conn.request(ApiKey.PRODUCE, produce_body("t", batch(), acks=0)) == {}
        # The connection answers the next request, so no response was queued for acks=0.
        response = await produce(conn, produce_body("t", batch(), acks=1))
        assert response["base_offset"] == 1
        await conn.aclose()


async def test_failed_acks_zero_produce_closes_the_connection(tmp_path, caplog):
    """As in Kafka: a producer that reads no answers learns of the failure by the close."""
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        conn = await broker.connect()
        assert await conn.request(ApiKey.PRODUCE, produce_body("missing", batch(), acks=0)) == {}
        with pytest.raises(KafkaConnectionError):
            await conn.request(ApiKey.PRODUCE, produce_body("t", batch(), acks=1))
        assert any("acks=0 produce failed (missing-0: UNKNOWN_TOPIC_OR_PARTITION)"
                   in r.getMessage() for r in caplog.records)
        other = await broker.connect()  # only that connection closed
        assert (await produce(other, produce_body("t", batch(), acks=1)))["error_code"] == 0
        await other.aclose()


async def test_unknown_topic_and_not_leader(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("elsewhere", leader=2, replicas=(2,))
        broker.create_topic("follower", leader=2, replicas=(2, 1))
        conn = await broker.connect()
        assert (await produce(conn, produce_body("missing", batch())))["error_code"] == \
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert (await produce(conn, produce_body("elsewhere", batch())))["error_code"] == \
            ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (await produce(conn, produce_body("follower", batch())))["error_code"] == \
            ErrorCode.NOT_LEADER_OR_FOLLOWER
        await conn.aclose()


async def test_bad_crc_is_corrupt_message(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        data = bytearray(batch([b"payload"]))
        data[-1] ^= 0xFF
        conn = await broker.connect()
        response = await produce(conn, produce_body("t", bytes(data)))
        assert response["error_code"] == ErrorCode.CORRUPT_MESSAGE
        assert broker.log("t").log_end_offset == 0
        await conn.aclose()


async def test_batch_over_max_message_bytes_is_too_large(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t", configs={"max.message.bytes": "200"})
        conn = await broker.connect()
        response = await produce(conn, produce_body("t", batch([b"x" * 500])))
        assert response["error_code"] == ErrorCode.MESSAGE_TOO_LARGE
        await conn.aclose()


async def test_timestamp_outside_the_allowed_window_is_invalid(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t", configs={"message.timestamp.before.max.ms": "60000"})
        conn = await broker.connect()
        future = await produce(conn, produce_body("t", batch(timestamp=now_ms() + 7_200_000)))
        past = await produce(conn, produce_body("t", batch(timestamp=now_ms() - 3_600_000)))
        assert future["error_code"] == past["error_code"] == ErrorCode.INVALID_TIMESTAMP
        await conn.aclose()


async def test_two_batches_in_one_partition_are_an_invalid_record(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        conn = await broker.connect()
        response = await produce(conn, produce_body("t", batch() + batch()), version=9)
        assert response["error_code"] == ErrorCode.INVALID_RECORD
        # A refusal of the whole batch names no record, as Kafka's does (KIP-467).
        assert response["record_errors"] == []
        assert response["error_message"]
        await conn.aclose()


async def test_log_append_time_topic_stamps_the_broker_time(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t", configs={"message.timestamp.type": "LogAppendTime"})
        conn = await broker.connect()
        before = now_ms()
        response = await produce(conn, produce_body("t", batch(timestamp=1000)))
        assert before <= response["log_append_time_ms"] <= now_ms()
        await conn.aclose()


async def test_idempotent_producer_sequences(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        conn = await broker.connect()
        pid = 7000
        first = batch([b"a", b"b"], producer_id=pid, producer_epoch=0, base_sequence=0)
        assert (await produce(conn, produce_body("t", first)))["base_offset"] == 0
        # A retry of the same batch gets its original offset and is not written twice.
        retry = await produce(conn, produce_body("t", first))
        assert (retry["error_code"], retry["base_offset"]) == (0, 0)
        assert broker.log("t").log_end_offset == 2
        gap = batch([b"c"], producer_id=pid, producer_epoch=0, base_sequence=5)
        assert (await produce(conn, produce_body("t", gap)))["error_code"] == \
            ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        bumped = batch([b"c"], producer_id=pid, producer_epoch=1, base_sequence=0)
        assert (await produce(conn, produce_body("t", bumped)))["base_offset"] == 2
        stale = batch([b"d"], producer_id=pid, producer_epoch=0, base_sequence=2)
        assert (await produce(conn, produce_body("t", stale)))["error_code"] == \
            ErrorCode.INVALID_PRODUCER_EPOCH
        await conn.aclose()


async def test_acks_all_needs_min_insync_replicas(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t", configs={"min.insync.replicas": "2"})
        conn = await broker.connect()
        assert (await produce(conn, produce_body("t", batch())))["error_code"] == \
            ErrorCode.NOT_ENOUGH_REPLICAS
        assert (await produce(conn, produce_body("t", batch(), acks=1)))["error_code"] == 0
        await conn.aclose()


async def test_acks_all_waits_for_the_follower_then_times_out(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t", replicas=(1, 2))
        conn = await broker.connect()
        with trio.fail_after(5):
            response = await produce(conn, produce_body("t", batch(), timeout_ms=200))
        assert response["error_code"] == ErrorCode.REQUEST_TIMED_OUT
        assert broker.log("t").high_watermark == 0
        await conn.aclose()


async def test_acks_all_completes_when_the_follower_fetches_past_the_batch(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t", replicas=(1, 2))
        producer = await broker.connect()
        follower = await broker.connect()
        async with trio.open_nursery() as nursery:
            result: dict = {}

            async def send() -> None:
                result.update(await produce(producer, produce_body("t", batch([b"x"]), timeout_ms=10_000)))

            nursery.start_soon(send)
            await broker.wait_until(lambda: broker.log("t").log_end_offset >= 1, "t")
            fetch = {"replica_id": 2, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
                     "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                     "topics": [{"topic": "t", "partitions": [
                         {"partition": 0, "fetch_offset": 1, "log_start_offset": 0,
                          "partition_max_bytes": 1 << 20}]}], "forgotten_topics_data": []}
            await follower.request(ApiKey.FETCH, fetch)
        assert result["error_code"] == 0 and result["base_offset"] == 0
        assert broker.log("t").high_watermark == 1
        await producer.aclose()
        await follower.aclose()


async def test_invalid_acks(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        conn = await broker.connect()
        assert (await produce(conn, produce_body("t", batch(), acks=2)))["error_code"] == \
            ErrorCode.INVALID_REQUIRED_ACKS
        await conn.aclose()


async def test_large_batches_are_stamped_in_the_request_frame_and_stored_intact(tmp_path):
    """Requests big enough to be received in place (no copy before stamping) keep their CRC
    and get consecutive offsets."""
    values = [bytes([i % 251]) * 1000 for i in range(300)]  # ~300 KB per batch
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        conn = await broker.connect()
        first = await produce(conn, produce_body("t", batch(values), acks=1))
        second = await produce(conn, produce_body("t", batch(values), acks=1))
        assert (first["error_code"], first["base_offset"]) == (0, 0)
        assert (second["error_code"], second["base_offset"]) == (0, 300)
        stored = broker.log("t").read_bytes(0, 1 << 20)
        headers = [h for _, h in iter_batches(stored, verify_crc=True)]
        assert [h.base_offset for h in headers] == [0, 300]
        assert values_of(stored) == list(enumerate(values + values))
        await conn.aclose()


async def test_acks_all_gets_not_enough_replicas_after_append_when_the_isr_shrinks(tmp_path):
    """The batch is appended with a full ISR; the committed ISR then drops below
    min.insync.replicas, which also lets the HW pass the batch: Kafka answers
    NOT_ENOUGH_REPLICAS_AFTER_APPEND, and the record stays in the log."""
    async with running_broker(tmp_path) as broker:
        topic_id = broker.create_topic("t", replicas=(1, 2), configs={"min.insync.replicas": "2"})
        conn = await broker.connect()
        async with trio.open_nursery() as nursery:
            result: dict = {}

            async def send() -> None:
                body = produce_body("t", batch([b"x"]), timeout_ms=10_000)
                result.update(await produce(conn, body))

            nursery.start_soon(send)
            await broker.wait_until(lambda: broker.log("t").log_end_offset >= 1, "t")
            assert broker.log("t").high_watermark == 0  # parked until follower 2 fetches
            broker.publish([PartitionChangeRecord(partition_id=0, topic_id=topic_id, isr=(1,))])
        assert result["error_code"] == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        assert (broker.log("t").log_end_offset, broker.log("t").high_watermark) == (1, 1)
        await conn.aclose()
