"""Fetch over a real socket: bytes, limits, long polls, sessions and errors."""

from __future__ import annotations

import os
import uuid

import trio
import trio.testing

from broker.log.results import UpperBound
from clients.protocol import ApiKey, ErrorCode, as_message
from metadata.records import BrokerEndpoint, FenceBrokerRecord, RegisterBrokerRecord
from tests.unit.broker.apis.batches import (batch, fetch_body, only_partition, produce_body,
    values_of)
from tests.unit.broker.apis.harness import running_broker


def partition_of(response: dict) -> dict:
    return only_partition(response, "responses", "partitions")


async def fill(broker, topic: str, batches: list[bytes]) -> None:  # type: ignore[no-untyped-def]
    conn = await broker.connect()
    for data in batches:
        response = await conn.request(ApiKey.PRODUCE, produce_body(topic, data))
        assert only_partition(response)["error_code"] == 0
    await conn.aclose()


async def test_fetch_returns_the_log_bytes_through_sendfile(tmp_path, monkeypatch):
    sendfile_calls: list[int] = []
    real_sendfile = os.sendfile

    def counting_sendfile(out_fd: int, in_fd: int, offset: int, count: int) -> int:
        sendfile_calls.append(count)
        return real_sendfile(out_fd, in_fd, offset, count)

    monkeypatch.setattr(os, "sendfile", counting_sendfile)
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        # Past the size below which a range is read and sent with the bytes around it.
        await fill(broker, "t", [batch([b"a", b"b"]), batch([b"c" * 30_000])])
        conn = await broker.connect()
        response = await conn.request(ApiKey.FETCH, fetch_body("t"))
        part = partition_of(response)
        assert response["session_id"] == 0 and response["error_code"] == 0
        assert (part["error_code"], part["high_watermark"], part["log_start_offset"]) == (0, 3, 0)
        assert part["last_stable_offset"] == 3 and part["preferred_read_replica"] == -1
        log = broker.log("t")
        assert bytes(part["records"]) == log.read_bytes(0, 1 << 20)
        assert values_of(part["records"]) == [(0, b"a"), (1, b"b"), (2, b"c" * 30_000)]
        # The records left by sendfile straight from the segment file, not through Python.
        assert sum(sendfile_calls) == len(log.read_bytes(0, 1 << 20))
        # A small range is read and leaves in the write of the response around it.
        del sendfile_calls[:]
        small = partition_of(await conn.request(ApiKey.FETCH, fetch_body("t", 0, max_bytes=100)))
        assert values_of(small["records"]) == [(0, b"a"), (1, b"b")]
        assert sendfile_calls == []
        await conn.aclose()


async def test_fetch_from_the_middle_and_at_the_end(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        await fill(broker, "t", [batch([b"a"]), batch([b"b"])])
        conn = await broker.connect()
        middle = partition_of(await conn.request(ApiKey.FETCH, fetch_body("t", 1)))
        assert values_of(middle["records"]) == [(1, b"b")]
        end = partition_of(await conn.request(ApiKey.FETCH, fetch_body("t", 2)))
        assert end["error_code"] == 0 and len(end["records"]) == 0
        await conn.aclose()


async def test_offset_out_of_range(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        await fill(broker, "t", [batch([b"a"])])
        conn = await broker.connect()
        part = partition_of(await conn.request(ApiKey.FETCH, fetch_body("t", 5)))
        assert part["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
        await conn.aclose()


async def test_errors_for_unknown_and_not_led_partitions(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("other", leader=2, replicas=(2,))
        conn = await broker.connect()
        assert partition_of(await conn.request(ApiKey.FETCH, fetch_body("nope")))["error_code"] == \
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert partition_of(await conn.request(ApiKey.FETCH, fetch_body("other")))["error_code"] == \
            ErrorCode.NOT_LEADER_OR_FOLLOWER
        await conn.aclose()


async def test_current_leader_epoch_is_checked(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        broker.change_leader("t", 0, 1)  # epoch 1
        conn = await broker.connect()
        fenced = partition_of(await conn.request(ApiKey.FETCH, fetch_body("t", current_leader_epoch=0)))
        ahead = partition_of(await conn.request(ApiKey.FETCH, fetch_body("t", current_leader_epoch=5)))
        ok = partition_of(await conn.request(ApiKey.FETCH, fetch_body("t", current_leader_epoch=1)))
        assert fenced["error_code"] == ErrorCode.FENCED_LEADER_EPOCH
        assert ahead["error_code"] == ErrorCode.UNKNOWN_LEADER_EPOCH
        assert ok["error_code"] == 0
        await conn.aclose()


async def test_long_poll_is_woken_by_an_append(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        consumer = await broker.connect()
        result: dict = {}
        async with trio.open_nursery() as nursery:
            async def poll() -> None:
                start = trio.current_time()
                result["response"] = await consumer.request(
                    ApiKey.FETCH, fetch_body("t", max_wait_ms=10_000, min_bytes=1))
                result["elapsed"] = trio.current_time() - start

            nursery.start_soon(poll)
            # Client and server share this trio run: once every task is blocked, the fetch
            # is parked in the purgatory.
            await trio.testing.wait_all_tasks_blocked(cushion=0.05)
            assert broker.server.replica_manager.purgatory.watched_keys() == 1
            await fill(broker, "t", [batch([b"wake"])])
        assert result["elapsed"] < 5
        assert values_of(partition_of(result["response"])["records"]) == [(0, b"wake")]
        await consumer.aclose()


async def test_consumer_long_poll_is_woken_by_the_high_watermark_not_the_append(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t", replicas=(1, 2))
        consumer, producer, follower = [await broker.connect() for _ in range(3)]
        purgatory = broker.server.replica_manager.purgatory
        result: dict = {}
        async with trio.open_nursery() as nursery:
            async def poll() -> None:
                result["response"] = await consumer.request(
                    ApiKey.FETCH, fetch_body("t", max_wait_ms=10_000, min_bytes=1))

            nursery.start_soon(poll)
            await trio.testing.wait_all_tasks_blocked(cushion=0.05)
            with purgatory.watch([("t", 0)]) as consumer_side:
                response = await producer.request(
                    ApiKey.PRODUCE, produce_body("t", batch([b"held"]), acks=1))
                assert only_partition(response)["error_code"] == 0
                # The append left the HW where it was: consumers were not woken.
                assert not await consumer_side.wait(trio.current_time())
                await trio.testing.wait_all_tasks_blocked(cushion=0.05)
                assert "response" not in result
                # The follower's fetch past the record moves the HW: that wakes them.
                await follower.request(ApiKey.FETCH, {
                    **fetch_body("t", 1), "replica_id": 2})
                assert await consumer_side.wait(trio.current_time())
        assert values_of(partition_of(result["response"])["records"]) == [(0, b"held")]
        for conn in (consumer, producer, follower):
            await conn.aclose()


async def test_follower_long_poll_waits_for_appends_and_reads_again_only_what_moved(
        tmp_path, monkeypatch):
    from broker.replica import fetch_read

    async with running_broker(tmp_path, other_brokers=(2, 3)) as broker:
        broker.create_topic("t", 2, replicas=(1, 2, 3))
        producer, follower, other = [await broker.connect() for _ in range(3)]
        response = await producer.request(ApiKey.PRODUCE, produce_body("t", batch([b"a"]), acks=1))
        assert only_partition(response)["error_code"] == 0

        def follower_fetch(replica: int, offset: int, max_wait_ms: int = 0) -> dict:
            body = fetch_body("t", offset, max_wait_ms=max_wait_ms)
            body["topics"][0]["partitions"].append(
                {**body["topics"][0]["partitions"][0], "partition": 1, "fetch_offset": 0})
            return {**body, "replica_id": replica}

        await follower.request(ApiKey.FETCH, follower_fetch(2, 1))
        reads: list[int] = []
        # Every partition a follower's fetch pass visits is looked at here first.
        real_visit = fetch_read.caught_up_entry

        def counting_visit(replicas, topic: str, fp,  # type: ignore[no-untyped-def]
                           *args, **kwargs):
            reads.append(fp.partition)
            return real_visit(replicas, topic, fp, *args, **kwargs)

        monkeypatch.setattr(fetch_read, "caught_up_entry", counting_visit)
        result: dict = {}
        async with trio.open_nursery() as nursery:
            async def poll() -> None:
                result["response"] = await follower.request(
                    ApiKey.FETCH, follower_fetch(2, 1, max_wait_ms=10_000))

            nursery.start_soon(poll)
            await trio.testing.wait_all_tasks_blocked(cushion=0.05)
            assert sorted(reads) == [0, 1]
            # The other follower's fetch moves partition 0's HW; a follower learns that with
            # its next fetch (as in Kafka), so the parked one is not answered for it.
            hw = partition_of(await other.request(ApiKey.FETCH, follower_fetch(3, 1)))
            assert hw["high_watermark"] == 1
            await trio.testing.wait_all_tasks_blocked(cushion=0.05)
            assert "response" not in result
            del reads[:]
            response = await producer.request(ApiKey.PRODUCE, produce_body(
                "t", batch([b"b"]), partition=1, acks=1))
            assert only_partition(response)["error_code"] == 0
        # Woken by the append to partition 1, the fetch read that partition alone again.
        assert reads == [1]
        answered = {p["partition_index"]: p for p in result["response"]["responses"][0]["partitions"]}
        assert values_of(answered[1]["records"]) == [(0, b"b")]
        assert len(answered[0]["records"]) == 0
        for conn in (producer, follower, other):
            await conn.aclose()


async def test_long_poll_times_out_after_max_wait(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        conn = await broker.connect()
        start = trio.current_time()
        part = partition_of(await conn.request(ApiKey.FETCH, fetch_body("t", max_wait_ms=300)))
        assert trio.current_time() - start >= 0.29
        assert part["error_code"] == 0 and len(part["records"]) == 0
        await conn.aclose()


async def test_first_partition_gets_a_whole_batch_beyond_max_bytes(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t", 2)
        big = batch([b"x" * 5000])
        await fill(broker, "t", [big])
        conn = await broker.connect()
        await conn.request(ApiKey.PRODUCE, {**produce_body("t", batch([b"y" * 5000]), partition=1)})
        body = fetch_body("t", max_bytes=100, partition_max_bytes=100)
        body["topics"][0]["partitions"].append({**body["topics"][0]["partitions"][0], "partition": 1})
        response = await conn.request(ApiKey.FETCH, body)
        first, second = response["responses"][0]["partitions"]
        assert values_of(first["records"]) == [(0, b"x" * 5000)]
        assert len(first["records"]) == len(big)
        # Nothing is left of max_bytes for the second partition.
        assert len(second["records"]) == 0 and second["high_watermark"] == 1
        await conn.aclose()


async def test_partition_max_bytes_limits_later_batches(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        await fill(broker, "t", [batch([b"a" * 1000]), batch([b"b" * 1000]), batch([b"c" * 1000])])
        first_size = len(batch([b"a" * 1000]))
        conn = await broker.connect()
        part = partition_of(await conn.request(
            ApiKey.FETCH, fetch_body("t", partition_max_bytes=first_size + 10)))
        assert values_of(part["records"]) == [(0, b"a" * 1000)]
        # Kafka cuts the response at the limit: the tail is a partial batch clients skip.
        assert len(part["records"]) == first_size + 10
        await conn.aclose()


async def test_incremental_fetch_for_an_unknown_session(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        conn = await broker.connect()
        body = {**fetch_body("t"), "session_id": 1234, "session_epoch": 3}
        response = await conn.request(ApiKey.FETCH, body)
        assert response["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        assert response["responses"] == []
        initial = await conn.request(ApiKey.FETCH, {**fetch_body("t"), "session_epoch": 0})
        assert initial["error_code"] == 0 and initial["session_id"] == 0
        await conn.aclose()


async def test_read_committed_returns_empty_aborted_list(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        await fill(broker, "t", [batch([b"a"])])
        conn = await broker.connect()
        committed = partition_of(await conn.request(ApiKey.FETCH, {**fetch_body("t"), "isolation_level": 1}))
        uncommitted = partition_of(await conn.request(ApiKey.FETCH, fetch_body("t")))
        assert committed["aborted_transactions"] == []
        assert uncommitted["aborted_transactions"] is None
        await conn.aclose()


async def test_replica_fetch_reads_past_the_high_watermark(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t", replicas=(1, 2))
        conn = await broker.connect()
        await conn.request(ApiKey.PRODUCE, produce_body("t", batch([b"a"]), acks=1))
        consumer = partition_of(await conn.request(ApiKey.FETCH, fetch_body("t")))
        assert consumer["high_watermark"] == 0 and len(consumer["records"]) == 0
        replica = partition_of(await conn.request(ApiKey.FETCH, {**fetch_body("t"), "replica_id": 2}))
        assert values_of(replica["records"]) == [(0, b"a")]
        await conn.aclose()


async def test_diverging_epoch_is_reported(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        await fill(broker, "t", [batch([b"a"]), batch([b"b"])])
        broker.change_leader("t", 0, 1)  # epoch 1 starts at offset 2
        conn = await broker.connect()
        body = fetch_body("t", 3, last_fetched_epoch=0, current_leader_epoch=1)
        part = partition_of(await conn.request(ApiKey.FETCH, body, 12))
        assert part["error_code"] == 0
        assert part["diverging_epoch"] == {"epoch": 0, "end_offset": 2}
        await conn.aclose()


async def test_fetch_hands_the_network_a_file_range(tmp_path):
    import os
    from types import SimpleNamespace

    from broker.apis.fetch import FetchHandler
    from broker.log.results import FileRange

    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        await fill(broker, "t", [batch([b"zero-copy"])])
        handler = FetchHandler(broker.server.replica_manager)
        request = SimpleNamespace(body=as_message(ApiKey.FETCH, 12, fetch_body("t")),
                                  api_version=12)
        response = await handler.handle(request, None)  # type: ignore[arg-type]
        records = partition_of(response)["records"]
        assert isinstance(records, FileRange)
        assert os.pread(records.fd, records.size, records.position) == broker.log("t").read_bytes(0, 1 << 20)


async def test_follower_fetch_session_answers_only_partitions_with_news(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t", 2)
        await fill(broker, "t", [batch([b"a"])])
        conn = await broker.connect()
        # A follower that already holds partition 0's record, and nothing of partition 1.
        body = {**fetch_body("t", 1), "replica_id": 7, "session_epoch": 0}
        body["topics"][0]["partitions"].append({**body["topics"][0]["partitions"][0],
                                                "partition": 1, "fetch_offset": 0})
        opened = await conn.request(ApiKey.FETCH, body)
        session_id = opened["session_id"]
        assert opened["error_code"] == 0 and session_id > 0
        assert [p["partition_index"] for p in opened["responses"][0]["partitions"]] == [0, 1]
        # Nothing new anywhere: the incremental answer is empty.
        quiet = await conn.request(ApiKey.FETCH, {**fetch_body("t"), "replica_id": 7,
                                                  "session_id": session_id, "session_epoch": 1,
                                                  "topics": []})
        assert quiet["error_code"] == 0 and quiet["responses"] == []
        # An append to partition 1 (named in no incremental fetch) is answered.
        conn2 = await broker.connect()
        await conn2.request(ApiKey.PRODUCE, produce_body("t", batch([b"b"]), partition=1))
        await conn2.aclose()
        news = await conn.request(ApiKey.FETCH, {**fetch_body("t"), "replica_id": 7,
                                                 "session_id": session_id, "session_epoch": 2,
                                                 "topics": []})
        (topic,) = news["responses"]
        assert [p["partition_index"] for p in topic["partitions"]] == [1]
        assert values_of(topic["partitions"][0]["records"]) == [(0, b"b")]
        stale = await conn.request(ApiKey.FETCH, {**fetch_body("t"), "replica_id": 7,
                                                  "session_id": session_id, "session_epoch": 2})
        assert stale["error_code"] == ErrorCode.INVALID_FETCH_SESSION_EPOCH
# -- fetching from the closest replica (KIP-392) -------------------------------------------


def register_racks(broker, racks: dict[int, str]) -> None:  # type: ignore[no-untyped-def]
    broker.publish([
        RegisterBrokerRecord(broker_id=b, incarnation_id=uuid.uuid4(), broker_epoch=10 + b,
                             end_points=(BrokerEndpoint("PLAINTEXT", broker.host, broker.port, 0),),
                             rack=rack, fenced=False)
        for b, rack in racks.items()])


async def test_a_follower_serves_client_metadata_fetches_up_to_its_high_watermark(tmp_path):
    async with running_broker(tmp_path) as broker:
        # Records with the leader's offsets: this broker leads "src", and follows "t".
        broker.create_topic("src")
        await fill(broker, "src", [batch([b"a", b"b"]), batch([b"c"]), batch([b"d"])])
        broker.create_topic("t", leader=2, replicas=(2, 1))
        follower_log = broker.log("t")
        follower_log.append_as_follower(broker.log("src").read_bytes(0, 1 << 20, UpperBound.LEO))
        follower_log.update_high_watermark(3)
        conn = await broker.connect()
        served = partition_of(await conn.request(ApiKey.FETCH, fetch_body("t"), version=11))
        assert served["error_code"] == 0 and served["high_watermark"] == 3
        assert values_of(served["records"]) == [(0, b"a"), (1, b"b"), (2, b"c")]
        # Between its HW and its LEO: nothing yet; past its LEO: out of range, as in Kafka.
        waiting = partition_of(await conn.request(ApiKey.FETCH, fetch_body("t", 3), version=12))
        assert waiting["error_code"] == 0 and len(waiting["records"]) == 0
        beyond = partition_of(await conn.request(ApiKey.FETCH, fetch_body("t", 5), version=12))
        assert beyond["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
        # Fetches without client metadata, and replica fetches, stay on the leader.
        old = partition_of(await conn.request(ApiKey.FETCH, fetch_body("t"), version=10))
        assert old["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        as_replica = partition_of(await conn.request(
            ApiKey.FETCH, {**fetch_body("t"), "replica_id": 3}, version=12))
        assert as_replica["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        await conn.aclose()


async def test_a_rack_aware_leader_names_the_in_sync_follower_of_the_consumers_rack(tmp_path):
    selector = {"replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector"}
    async with running_broker(tmp_path, extra=selector, other_brokers=(2, 3)) as broker:
        register_racks(broker, {1: "r1", 2: "r2", 3: "r3"})
        broker.create_topic("t", replicas=(1, 2, 3))
        conn = await broker.connect()
        for value in (b"a", b"b"):
            response = await conn.request(ApiKey.PRODUCE, produce_body("t", batch([value]), acks=1))
            assert only_partition(response)["error_code"] == 0
        # Followers report their log end offsets by fetching: 2 holds both records, 3 one.
        for replica, offset in ((2, 2), (3, 1)):
            await conn.request(ApiKey.FETCH, {**fetch_body("t", offset), "replica_id": replica},
                               version=12)

        async def fetch(rack: str, offset: int = 0, version: int = 12) -> dict:
            return partition_of(await conn.request(
                ApiKey.FETCH, {**fetch_body("t", offset), "rack_id": rack}, version=version))

        redirected = await fetch("r2")
        assert redirected["error_code"] == 0 and redirected["preferred_read_replica"] == 2
        assert len(redirected["records"]) == 0 and redirected["high_watermark"] == 1
        assert (await fetch("r3", 1))["preferred_read_replica"] == 3
        # Follower 3 does not hold offset 2 yet; the leader's rack and unknown racks stay.
        for rack, offset in (("r3", 2), ("r1", 0), ("elsewhere", 0), ("", 0)):
            served = await fetch(rack, offset)
            assert served["preferred_read_replica"] == -1, rack
        assert values_of((await fetch("r1"))["records"]) == [(0, b"a")]  # HW 1: follower 3
        # A fenced follower is never named.
        broker.publish([FenceBrokerRecord(id=2, epoch=12)])
        assert (await fetch("r2"))["preferred_read_replica"] == -1
        await conn.aclose()
