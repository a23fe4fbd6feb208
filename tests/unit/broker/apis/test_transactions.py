"""Transactions on a partition leader over a real socket: transactional produce, WriteTxnMarkers,
read_committed Fetch and ListOffsets, DescribeProducers and the KIP-890 verification hook."""

from __future__ import annotations

from typing import Any

from broker.apis.produce import ProduceHandler
from broker.apis.txn_markers import TxnMarkerHandlers
from clients.protocol import ApiKey, ErrorCode
from clients.records.batch import Record, encode_batch
from tests.unit.broker.apis.batches import (batch, fetch_body, now_ms, only_partition,
    produce_body, values_of)
from tests.unit.broker.apis.harness import running_broker
from tests.unit.broker.apis.test_offsets import list_offset

TXN_ID = "txn-1"


def txn_batch(pid: int, seq: int, values: list[bytes], epoch: int = 0) -> bytes:
    records = [Record(None, now_ms(), None, v) for v in values]
    return encode_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                        is_transactional=True)


async def produce_txn(conn, topic: str, data: bytes, partition: int = 0) -> dict:  # type: ignore[no-untyped-def]
    body = {**produce_body(topic, data, partition=partition), "transactional_id": TXN_ID}
    return only_partition(await conn.request(ApiKey.PRODUCE, body))


def markers_body(pid: int, commit: bool, partitions: dict[str, list[int]], *, epoch: int = 0,
                 coordinator_epoch: int = 0) -> dict:
    return {"markers": [{"producer_id": pid, "producer_epoch": epoch, "transaction_result": commit,
                         "coordinator_epoch": coordinator_epoch,
                         "topics": [{"name": t, "partition_indexes": ps} for t, ps in partitions.items()]}]}


async def write_marker(conn, pid: int, commit: bool, topic: str = "t", **kw: int) -> int:  # type: ignore[no-untyped-def]
    response = await conn.request(ApiKey.WRITE_TXN_MARKERS, markers_body(pid, commit, {topic: [0]}, **kw))
    return response["markers"][0]["topics"][0]["partitions"][0]["error_code"]


async def fetch_committed(conn, topic: str = "t", offset: int = 0) -> dict:  # type: ignore[no-untyped-def]
    body = fetch_body(topic, offset)
    body["isolation_level"] = 1
    return only_partition(await conn.request(ApiKey.FETCH, body), "responses", "partitions")


async def test_read_committed_stops_at_an_open_transaction_and_learns_of_aborts(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        conn = await broker.connect()
        assert only_partition(await conn.request(ApiKey.PRODUCE, produce_body("t", batch([b"plain"]))))["error_code"] == 0
        assert (await produce_txn(conn, "t", txn_batch(1000, 0, [b"a1", b"a2"])))["error_code"] == 0   # 1-2
        assert (await produce_txn(conn, "t", txn_batch(2000, 0, [b"b1"])))["error_code"] == 0           # 3
        part = await fetch_committed(conn)
        assert (part["high_watermark"], part["last_stable_offset"]) == (4, 1)
        assert values_of(part["records"]) == [(0, b"plain")]
        assert part["aborted_transactions"] == []
        assert (await list_offset(conn, "t", -1, isolation_level=1))["offset"] == 1
        assert (await list_offset(conn, "t", -1))["offset"] == 4

        assert await write_marker(conn, 1000, False) == 0                                              # 4
        part = await fetch_committed(conn)
        assert part["last_stable_offset"] == 3
        assert part["aborted_transactions"] == [{"producer_id": 1000, "first_offset": 1}]
        assert [v for _, v in values_of(part["records"])] == [b"plain", b"a1", b"a2"]

        assert await write_marker(conn, 2000, True) == 0                                               # 5
        part = await fetch_committed(conn)
        assert part["last_stable_offset"] == part["high_watermark"] == 6
        assert (await list_offset(conn, "t", -1, isolation_level=1))["offset"] == 6
        # The index entry is found from any fetch offset inside the aborted range.
        assert (await fetch_committed(conn, offset=2))["aborted_transactions"] == [
            {"producer_id": 1000, "first_offset": 1}]
        assert (await fetch_committed(conn, offset=5))["aborted_transactions"] == []
        await conn.aclose()


async def test_write_txn_markers_errors(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        broker.create_topic("elsewhere", leader=2, replicas=(2,))
        broker.create_topic("followed", leader=2, replicas=(2, 1))
        conn = await broker.connect()
        assert (await produce_txn(conn, "t", txn_batch(7, 0, [b"x"], epoch=3)))["error_code"] == 0
        assert await write_marker(conn, 7, True, "missing") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert await write_marker(conn, 7, True, "elsewhere") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert await write_marker(conn, 7, True, "followed") == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert await write_marker(conn, 7, True, epoch=2) == ErrorCode.INVALID_PRODUCER_EPOCH
        assert await write_marker(conn, 7, True, epoch=3, coordinator_epoch=5) == 0
        assert await write_marker(conn, 7, False, epoch=3, coordinator_epoch=4) == \
            ErrorCode.TRANSACTION_COORDINATOR_FENCED
        # A stale producer epoch on a transactional produce is Kafka's INVALID_PRODUCER_EPOCH.
        assert (await produce_txn(conn, "t", txn_batch(7, 1, [b"y"], epoch=2)))["error_code"] == \
            ErrorCode.INVALID_PRODUCER_EPOCH
        await conn.aclose()


async def test_markers_on_consumer_offsets_reach_the_listener(tmp_path):
    heard: list[tuple[int, int, bool]] = []

    class Listener:
        async def on_offsets_marker(self, partition: int, producer_id: int, committed: bool) -> None:
            heard.append((partition, producer_id, committed))

    async with running_broker(tmp_path) as broker:
        broker.create_topic("__consumer_offsets", 2)
        broker.create_topic("t")
        TxnMarkerHandlers(broker.server.replica_manager, Listener()).register(broker.server.router)
        conn = await broker.connect()
        body = markers_body(42, True, {"__consumer_offsets": [1], "t": [0]})
        response = await conn.request(ApiKey.WRITE_TXN_MARKERS, body)
        codes = [p["error_code"] for t in response["markers"][0]["topics"] for p in t["partitions"]]
        assert codes == [0, 0]
        assert heard == [(1, 42, True)]
        await conn.aclose()


async def test_describe_producers(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        broker.create_topic("elsewhere", leader=2, replicas=(2,))
        conn = await broker.connect()
        await conn.request(ApiKey.PRODUCE, produce_body("t", batch([b"x"] * 3, producer_id=5,
                                                                    producer_epoch=1, base_sequence=0)))
        await produce_txn(conn, "t", txn_batch(6, 0, [b"y"], epoch=2))
        response = await conn.request(ApiKey.DESCRIBE_PRODUCERS, {"topics": [
            {"name": "t", "partition_indexes": [0]}, {"name": "elsewhere", "partition_indexes": [0]}]})
        t, elsewhere = response["topics"]
        producers = sorted(t["partitions"][0]["active_producers"], key=lambda p: p["producer_id"])
        assert [(p["producer_id"], p["producer_epoch"], p["last_sequence"], p["current_txn_start_offset"])
                for p in producers] == [(5, 1, 2, -1), (6, 2, 0, 3)]
        assert all(p["last_timestamp"] > 0 for p in producers)
        assert elsewhere["partitions"][0]["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        await conn.aclose()


class StubCoordinator:
    """Answers verification as a coordinator would for the partitions it was told of."""

    def __init__(self, added: set[tuple[str, int]], refusal: int = ErrorCode.INVALID_TXN_STATE) -> None:
        self.added = added
        self.refusal = refusal
        self.calls: list[tuple[str, int, int, list[tuple[str, int]]]] = []

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        self.calls.append((transactional_id, producer_id, producer_epoch, partitions))
        return {p: 0 if p in self.added else int(self.refusal) for p in partitions}


async def test_verification_refuses_a_partition_not_in_the_transaction(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t", 2)
        coordinator = StubCoordinator({("t", 0)})
        ProduceHandler(broker.server.replica_manager, coordinator).register(broker.server.router)
        conn = await broker.connect()
        assert (await produce_txn(conn, "t", txn_batch(9, 0, [b"in"]), 0))["error_code"] == 0
        refused = await produce_txn(conn, "t", txn_batch(9, 0, [b"out"]), 1)
        assert refused["error_code"] == ErrorCode.INVALID_TXN_STATE
        assert broker.log("t", 1).log_end_offset == 0
        # The open transaction needs no second verification.
        assert (await produce_txn(conn, "t", txn_batch(9, 1, [b"more"]), 0))["error_code"] == 0
        assert coordinator.calls == [(TXN_ID, 9, 0, [("t", 0)]), (TXN_ID, 9, 0, [("t", 1)])]
        # After the marker, the next transaction is verified again.
        assert await write_marker(conn, 9, True) == 0
        coordinator.refusal = ErrorCode.CONCURRENT_TRANSACTIONS
        coordinator.added.clear()
        retriable = await produce_txn(conn, "t", txn_batch(9, 2, [b"next"]), 0)
        assert retriable["error_code"] == ErrorCode.NOT_ENOUGH_REPLICAS
        await conn.aclose()


async def test_a_marker_during_verification_voids_it(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        partition = broker.server.replica_manager.get_partition("t", 0)
        conn = await broker.connect()

        class MarkerMeanwhile(StubCoordinator):
            async def verify(self, *args: Any) -> dict[tuple[str, int], int]:
                answer = await super().verify(*args)
                partition.append_marker(False, 9, 0, 0)  # the coordinator aborted meanwhile
                return answer

        ProduceHandler(broker.server.replica_manager, MarkerMeanwhile({("t", 0)})).register(broker.server.router)
        late = await produce_txn(conn, "t", txn_batch(9, 0, [b"late"]))
        assert late["error_code"] == ErrorCode.INVALID_TXN_STATE
        assert not partition.log.producer_state.has_ongoing_txn(9)
        await conn.aclose()


async def test_verifications_in_flight_together_share_their_guard(tmp_path):
    # Two Produce requests of a transaction's first batches in flight at once (a pipelining
    # producer): the second verification must not void the first.
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        partition = broker.server.replica_manager.get_partition("t", 0)
        first, second = partition.start_verification(9), partition.start_verification(9)
        partition.append_as_leader(bytearray(txn_batch(9, 0, [b"a"])), 1, verification=first)
        partition.append_as_leader(bytearray(txn_batch(9, 1, [b"b"])), 1, verification=second)
        assert partition.log.log_end_offset == 2
