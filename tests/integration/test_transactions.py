"""Transactions end to end with librdkafka's transactional producer (confluent-kafka), on
clusters started as scripts/bootstrap-quorum starts them: commit and abort seen through
read_committed and read_uncommitted consumers, the last stable offset held back by open
transactions, zombie fencing, and the coordinator aborting a transaction past its timeout.
"""

from __future__ import annotations

import time
from typing import Any, Iterator

import pytest

from cluster.testing.cluster import RaftkaCluster, start_cluster
from cluster.testing.waiting import wait_for
from clients.net import BlockingKafkaConnection
from clients.protocol import ApiKey, ErrorCode

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.slow

TXN_SETTINGS = {"transaction_state_log_num_partitions": 3,
                "transaction_abort_timed_out_transaction_cleanup_interval_ms": 500}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RaftkaCluster]:
    with start_cluster(tmp_path_factory.mktemp("txn"), 3, **TXN_SETTINGS) as started:
        yield started


def producer(cluster: RaftkaCluster, transactional_id: str, **extra: Any) -> Any:
    config = {"bootstrap.servers": cluster.bootstrap_servers,
              "transactional.id": transactional_id, "broker.address.family": "v4",
              "linger.ms": 5, **extra}
    return confluent_kafka.Producer(config)


def consume(cluster: RaftkaCluster, topic: str, isolation: str, expected: int,
            partitions: int = 1, timeout: float = 30.0) -> list[bytes]:
    """Values of `topic` from the start, read with `isolation`, until `expected` arrived (or
    the timeout: the caller's assertion then says what was missing)."""
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": f"read-{topic}-{isolation}",
        "isolation.level": isolation, "enable.auto.commit": False,
        "broker.address.family": "v4", "auto.offset.reset": "earliest"})
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(partitions)])
        values: list[bytes] = []
        deadline = time.monotonic() + timeout
        while len(values) < expected and time.monotonic() < deadline:
            for msg in consumer.consume(500, timeout=0.2):
                if msg.error() is None:
                    values.append(msg.value())
        return values
    finally:
        consumer.close()


def end_offsets(cluster: RaftkaCluster, topic: str, isolation: str) -> int:
    """The high watermark (read_uncommitted) or last stable offset (read_committed) of
    partition 0, as a client sees it."""
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": "offsets-probe",
        "isolation.level": isolation, "broker.address.family": "v4"})
    try:
        return consumer.get_watermark_offsets(confluent_kafka.TopicPartition(topic, 0),
                                              timeout=10, cached=False)[1]
    finally:
        consumer.close()


def test_committed_is_visible_to_read_committed_and_aborted_never(cluster: RaftkaCluster):
    cluster.create_topic("txn-basic", 1, 3)
    p = producer(cluster, "basic")
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(10):
        p.produce("txn-basic", b"committed-%d" % i)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(10):
        p.produce("txn-basic", b"aborted-%d" % i)
    p.flush(30)
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce("txn-basic", b"last")
    p.commit_transaction(30)

    committed = consume(cluster, "txn-basic", "read_committed", 11)
    assert committed == [b"committed-%d" % i for i in range(10)] + [b"last"]
    uncommitted = consume(cluster, "txn-basic", "read_uncommitted", 21)
    assert uncommitted == ([b"committed-%d" % i for i in range(10)]
                           + [b"aborted-%d" % i for i in range(10)] + [b"last"])


def test_interleaved_open_transactions_hold_the_last_stable_offset_back(cluster: RaftkaCluster):
    cluster.create_topic("txn-lso", 1, 3)
    first, second = producer(cluster, "lso-1"), producer(cluster, "lso-2")
    for p in (first, second):
        p.init_transactions(30)
        p.begin_transaction()
    first.produce("txn-lso", b"first-a")
    first.flush(30)
    second.produce("txn-lso", b"second-a")
    second.flush(30)
    first.produce("txn-lso", b"first-b")
    first.flush(30)
    assert end_offsets(cluster, "txn-lso", "read_uncommitted") == 3
    # The earliest open transaction starts at offset 0: nothing is stable yet.
    assert end_offsets(cluster, "txn-lso", "read_committed") == 0
    second.commit_transaction(30)
    # The second one is committed, but the first (started before it) still holds the LSO.
    assert end_offsets(cluster, "txn-lso", "read_committed") == 0
    assert consume(cluster, "txn-lso", "read_committed", 1, timeout=3) == []
    first.commit_transaction(30)
    stable = wait_for(lambda: (o := end_offsets(cluster, "txn-lso", "read_committed")) >= 5 and o,
                      "the LSO to pass both markers")
    assert stable == 5  # three records and two markers
    assert consume(cluster, "txn-lso", "read_committed", 3) == [b"first-a", b"second-a",
                                                                 b"first-b"]


def test_a_second_producer_with_the_same_id_fences_the_first(cluster: RaftkaCluster):
    cluster.create_topic("txn-zombie", 1, 3)
    zombie = producer(cluster, "zombie")
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce("txn-zombie", b"from-the-zombie")
    zombie.flush(30)
    successor = producer(cluster, "zombie")
    # Fences the zombie and aborts its open transaction.
    successor.init_transactions(30)
    successor.begin_transaction()
    successor.produce("txn-zombie", b"from-the-successor")
    successor.commit_transaction(30)

    zombie.produce("txn-zombie", b"late-zombie-write")
    with pytest.raises(confluent_kafka.KafkaException) as failure:
        zombie.commit_transaction(30)
    fenced = (confluent_kafka.KafkaError.PRODUCER_FENCED, confluent_kafka.KafkaError._FENCED)
    error = failure.value.args[0]
    assert error.code() in fenced, error
    if not error.fatal():
        # The leader refused the zombie's batch first (PRODUCER_FENCED on Produce, which
        # librdkafka treats as abortable); the coordinator refuses its abort for good.
        assert error.txn_requires_abort()
        with pytest.raises(confluent_kafka.KafkaException) as aborting:
            zombie.abort_transaction(30)
        error = aborting.value.args[0]
        assert error.code() in fenced and error.fatal(), error
    assert consume(cluster, "txn-zombie", "read_committed", 1) == [b"from-the-successor"]
    assert consume(cluster, "txn-zombie", "read_committed", 2, timeout=3) == [
        b"from-the-successor"]


def test_a_transaction_left_open_past_its_timeout_is_aborted(cluster: RaftkaCluster):
    cluster.create_topic("txn-timeout", 1, 3)
    idle = producer(cluster, "idle", **{"transaction.timeout.ms": 2000})
    idle.init_transactions(30)
    idle.begin_transaction()
    idle.produce("txn-timeout", b"never-committed")
    idle.flush(30)
    assert end_offsets(cluster, "txn-timeout", "read_committed") == 0
    # The coordinator aborts it: the abort marker lets the LSO past the open data.
    wait_for(lambda: end_offsets(cluster, "txn-timeout", "read_committed") == 2,
             "the timed-out transaction to be aborted", timeout=30)
    other = producer(cluster, "after-idle")
    other.init_transactions(30)
    other.begin_transaction()
    other.produce("txn-timeout", b"committed-after")
    other.commit_transaction(30)
    assert consume(cluster, "txn-timeout", "read_committed", 1) == [b"committed-after"]
    # The producer that sat idle is fenced by the abort.
    with pytest.raises(confluent_kafka.KafkaException):
        idle.commit_transaction(10)


def coordinator_port(cluster: RaftkaCluster, transactional_id: str) -> tuple[int, int]:
    """(node id, client port) of the id's coordinator, once FindCoordinator names one."""
    def find() -> tuple[int, int] | None:
        answer = request(cluster, cluster.info.nodes[0].client_port, ApiKey.FIND_COORDINATOR,
                         {"key": transactional_id, "key_type": 1}, 3)
        if answer["error_code"]:
            return None
        return int(answer["node_id"]), int(answer["port"])
    return wait_for(find, f"a coordinator for {transactional_id}")


def request(cluster: RaftkaCluster, port: int, api_key: int, body: dict[str, Any],
            version: int | None = None) -> dict[str, Any]:
    with BlockingKafkaConnection("127.0.0.1", port, client_id="txn-wire") as conn:
        return conn.request(api_key, body, version)


def test_the_transactional_apis_on_the_wire(cluster: RaftkaCluster):
    cluster.create_topic("txn-wire", 2, 3)
    node, port = coordinator_port(cluster, "wire")
    other = next(n.client_port for n in cluster.info.nodes if n.node_id != node)

    def init(timeout_ms: int = 60_000, at: int = port) -> dict[str, Any]:
        return request(cluster, at, ApiKey.INIT_PRODUCER_ID,
                       {"transactional_id": "wire", "transaction_timeout_ms": timeout_ms})

    assert init(at=other)["error_code"] == ErrorCode.NOT_COORDINATOR
    assert init(900_001)["error_code"] == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    first = init()
    assert first["error_code"] == 0 and first["producer_epoch"] == 0
    pid = first["producer_id"]

    def add(topics: list[tuple[str, list[int]]], epoch: int = 0, producer_id: int = pid,
            version: int = 3) -> dict[tuple[str, int], int]:
        answer = request(cluster, port, ApiKey.ADD_PARTITIONS_TO_TXN, {
            "v3_and_below_transactional_id": "wire", "v3_and_below_producer_id": producer_id,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in topics]},
            version)
        return {(t["name"], p["partition_index"]): p["partition_error_code"]
                for t in answer["results_by_topic_v3_and_below"]
                for p in t["results_by_partition"]}

    def end(commit: bool, epoch: int = 0) -> int:
        return request(cluster, port, ApiKey.END_TXN, {
            "transactional_id": "wire", "producer_id": pid, "producer_epoch": epoch,
            "committed": commit})["error_code"]

    def describe(ids: list[str]) -> list[dict[str, Any]]:
        return request(cluster, port, ApiKey.DESCRIBE_TRANSACTIONS,
                       {"transactional_ids": ids})["transaction_states"]

    assert end(True) == ErrorCode.INVALID_TXN_STATE  # nothing is open
    assert add([("txn-wire", [0]), ("no-such-topic", [0])]) == {
        ("txn-wire", 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
        ("no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert add([("txn-wire", [0])], epoch=1) == {("txn-wire", 0): ErrorCode.PRODUCER_FENCED}
    assert add([("txn-wire", [0])], producer_id=pid + 1000) == {
        ("txn-wire", 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING}
    assert add([("txn-wire", [0])], version=0) == {("txn-wire", 0): 0}

    # The broker-side form (v4+): verify_only reports, adds nothing.
    verified = request(cluster, port, ApiKey.ADD_PARTITIONS_TO_TXN, {"transactions": [{
        "transactional_id": "wire", "producer_id": pid, "producer_epoch": 0,
        "verify_only": True, "topics": [{"name": "txn-wire", "partitions": [0, 1]}]}]}, 4)
    assert verified["error_code"] == 0
    assert {p["partition_index"]: p["partition_error_code"]
            for t in verified["results_by_transaction"][0]["topic_results"]
            for p in t["results_by_partition"]} == {0: 0, 1: ErrorCode.INVALID_TXN_STATE}

    [described, unknown] = describe(["wire", "never-used"])
    assert (described["error_code"], described["transaction_state"], described["producer_id"],
            described["transaction_timeout_ms"]) == (0, "Ongoing", pid, 60_000)
    assert described["topics"] == [{"topic": "txn-wire", "partitions": [0]}]
    assert unknown["error_code"] == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    listed = request(cluster, port, ApiKey.LIST_TRANSACTIONS,
                     {"state_filters": ["Ongoing", "Bogus"], "producer_id_filters": []})
    assert listed["unknown_state_filters"] == ["Bogus"]
    assert {"transactional_id": "wire", "producer_id": pid,
            "transaction_state": "Ongoing"} in listed["transaction_states"]

    assert end(True, epoch=1) == ErrorCode.PRODUCER_FENCED
    assert end(False) == 0
    assert end(True) in (ErrorCode.INVALID_TXN_STATE, ErrorCode.CONCURRENT_TRANSACTIONS)
    wait_for(lambda: describe(["wire"])[0]["transaction_state"] == "CompleteAbort",
             "the abort markers to be written")
    assert end(False) == 0  # a retried abort is answered again
    bumped = init()
    assert (bumped["error_code"], bumped["producer_id"], bumped["producer_epoch"]) == (0, pid, 1)


def test_aiokafka_transactional_producer_commits_and_aborts(cluster: RaftkaCluster):
    aiokafka = pytest.importorskip("aiokafka")
    import asyncio

    cluster.create_topic("txn-aiokafka", 1, 3)

    async def run() -> None:
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers,
                                             transactional_id="aiokafka-txn")
        await producer.start()
        try:
            async with producer.transaction():
                await producer.send_and_wait("txn-aiokafka", b"kept", partition=0)
            await producer.begin_transaction()
            await producer.send_and_wait("txn-aiokafka", b"dropped", partition=0)
            await producer.abort_transaction()
            async with producer.transaction():
                await producer.send_and_wait("txn-aiokafka", b"kept-too", partition=0)
        finally:
            await producer.stop()

    asyncio.run(run())
    assert consume(cluster, "txn-aiokafka", "read_committed", 2) == [b"kept", b"kept-too"]
    assert consume(cluster, "txn-aiokafka", "read_uncommitted", 3) == [
        b"kept", b"dropped", b"kept-too"]


def test_a_transactional_batch_to_a_partition_not_in_the_transaction_is_refused(
        cluster: RaftkaCluster):
    """KIP-890: the leader asks the coordinator (here or on another broker) first."""
    from clients.records.batch import Record, encode_batch

    cluster.create_topic("txn-verify", 3, 3)
    _, port = coordinator_port(cluster, "verify")
    init = request(cluster, port, ApiKey.INIT_PRODUCER_ID,
                   {"transactional_id": "verify", "transaction_timeout_ms": 60_000})
    pid = init["producer_id"]
    added = request(cluster, port, ApiKey.ADD_PARTITIONS_TO_TXN, {
        "v3_and_below_transactional_id": "verify", "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": 0,
        "v3_and_below_topics": [{"name": "txn-verify", "partitions": [0]}]}, 3)
    assert added["results_by_topic_v3_and_below"][0]["results_by_partition"][0][
        "partition_error_code"] == 0
    with cluster.admin() as admin:
        leaders = {p.partition: p.leader for p in admin.describe_topics(["txn-verify"])[0].partitions}

    def produce(partition: int) -> int:
        batch = encode_batch([Record(None, 0, None, b"v")], producer_id=pid, producer_epoch=0,
                             base_sequence=0, is_transactional=True)
        answer = request(cluster, cluster.info.node(leaders[partition]).client_port,
                         ApiKey.PRODUCE, {"transactional_id": "verify", "acks": -1,
                                          "timeout_ms": 10_000, "topic_data": [{
                                              "name": "txn-verify", "partition_data": [{
                                                  "index": partition, "records": batch}]}]})
        return answer["responses"][0]["partition_responses"][0]["error_code"]

    # Every partition but 0 was never added: refused, whichever broker leads it.
    assert produce(1) == ErrorCode.INVALID_TXN_STATE
    assert produce(2) == ErrorCode.INVALID_TXN_STATE
    assert produce(0) == 0


def test_older_request_versions_hear_invalid_producer_epoch_for_fenced(cluster: RaftkaCluster):
    cluster.create_topic("txn-versions", 1, 3)
    _, port = coordinator_port(cluster, "versions")
    init = request(cluster, port, ApiKey.INIT_PRODUCER_ID,
                   {"transactional_id": "versions", "transaction_timeout_ms": 60_000})
    request(cluster, port, ApiKey.INIT_PRODUCER_ID,
            {"transactional_id": "versions", "transaction_timeout_ms": 60_000})  # epoch 1
    stale = {"transactional_id": "versions", "producer_id": init["producer_id"],
             "producer_epoch": 0, "committed": True}
    assert request(cluster, port, ApiKey.END_TXN, stale, 1)["error_code"] == \
        ErrorCode.INVALID_PRODUCER_EPOCH
    assert request(cluster, port, ApiKey.END_TXN, stale, 2)["error_code"] == \
        ErrorCode.PRODUCER_FENCED


def test_too_few_brokers_for_the_transaction_log_is_said_to_the_client(tmp_path):
    with start_cluster(tmp_path, 1, transaction_state_log_replication_factor=3) as single:
        answer = request(single, single.info.nodes[0].client_port, ApiKey.FIND_COORDINATOR,
                         {"key": "t", "key_type": 1}, 3)
        assert answer["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert answer["error_message"] == (
            "__transaction_state cannot be created: 1 live broker(s), "
            "transaction.state.log.replication.factor is 3")
