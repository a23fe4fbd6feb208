"""`raftka transactions` (kafka-transactions.sh) against a real cluster with an open
transaction: list, describe, describe-producers, find-hanging (an ongoing transaction the
coordinator knows is not hanging; a transactional write the coordinator never heard of is),
abort --start-offset (the leader writes the ABORT marker: read_committed readers move past
the data), and one-line errors."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Iterator

import pytest

from cluster.testing.cluster import RaftkaCluster, start_cluster
from cluster.testing.waiting import wait_for
from clients.admin import BlockingAdmin
from clients.net import BlockingKafkaConnection
from clients.producer import BlockingProducer
from clients.protocol import ApiKey
from clients.records.batch import encode_batch
from clients.records.record import Record

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RaftkaCluster]:
    # Without KIP-890's check (as on a broker before it): the leader then accepts a
    # transactional write to a partition the coordinator was never told of, which is how a
    # transaction comes to hang.
    with start_cluster(tmp_path_factory.mktemp("txn-cli"), 3,
                       transaction_state_log_num_partitions=3,
                       transaction_partition_verification_enable="false") as started:
        yield started


def transactions(cluster: RaftkaCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "broker.cli.main", "transactions",
                           "--bootstrap-server", cluster.bootstrap_servers, *args],
                          capture_output=True, text=True, timeout=120)


def table(result: subprocess.CompletedProcess[str]) -> list[list[str]]:
    assert result.returncode == 0, result.stderr
    return [[cell.strip() for cell in line.rstrip("\t").split("\t")]
            for line in result.stdout.splitlines()]


def last_stable_offset(cluster: RaftkaCluster, topic: str) -> int:
    with BlockingAdmin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        listed = admin.list_offsets({(topic, 0): -1}, isolation_level=1)[(topic, 0)]
        return listed.offset if listed is not None else 0


def test_the_transactions_tool_lists_describes_and_aborts_an_open_transaction(
        cluster: RaftkaCluster) -> None:
    cluster.create_topic("cli-txn", 1, 3)
    with BlockingProducer({"bootstrap.servers": cluster.bootstrap_servers,
                           "transactional.id": "cli-open"}) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(3):
            producer.send("cli-txn", b"open-%d" % i)
        producer.flush()
        producer_id = producer._core.idempotence.identity.producer_id

        listed = table(transactions(cluster, "--list"))
        assert listed[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
        row = next(r for r in listed[1:] if r[0] == "cli-open")
        assert row[2:] == [str(producer_id), "Ongoing"]

        described = table(transactions(cluster, "describe", "--transactional-id", "cli-open"))
        assert described[0][:5] == ["CoordinatorId", "TransactionalId", "ProducerId",
                                    "ProducerEpoch", "TransactionState"]
        assert described[1][1:3] == ["cli-open", str(producer_id)]
        assert described[1][4] == "Ongoing" and described[1][8] == "cli-txn-0"

        producers = table(transactions(cluster, "describe-producers", "--topic", "cli-txn",
                                       "--partition", "0"))
        assert producers[0] == ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch",
                                "LastSequence", "LastTimestamp",
                                "CurrentTransactionStartOffset"]
        mine = next(r for r in producers[1:] if r[0] == str(producer_id))
        assert mine[3] == "2" and mine[5] == "0"
        with BlockingAdmin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            (described,) = admin.describe_topics(["cli-txn"])
        leader = described.partitions[0].leader
        on_leader = table(transactions(cluster, "describe-producers", "--topic", "cli-txn",
                                       "--partition", "0", "--broker-id", str(leader)))
        assert on_leader == producers

        # Open for longer than 0 minutes, but its coordinator still drives it: not hanging.
        hanging = table(transactions(cluster, "find-hanging", "--broker-id", "1",
                                     "--max-transaction-timeout", "0"))
        assert hanging == [["Topic", "Partition", "ProducerId", "ProducerEpoch",
                            "CoordinatorEpoch", "StartOffset", "LastTimestamp",
                            "Duration(min)"]]
        assert last_stable_offset(cluster, "cli-txn") == 0

        aborted = transactions(cluster, "abort", "--topic", "cli-txn", "--partition", "0",
                               "--start-offset", "0")
        assert aborted.returncode == 0, aborted.stderr
        # The leader's ABORT marker ends the transaction on the partition.
        wait_for(lambda: last_stable_offset(cluster, "cli-txn") == 4,
                 "the LSO to pass the abort marker")
        after = table(transactions(cluster, "describe-producers", "--topic", "cli-txn",
                                   "--partition", "0"))
        assert next(r for r in after[1:] if r[0] == str(producer_id))[5] == "None"


HANGING_HEADER = ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                  "StartOffset", "LastTimestamp", "Duration(min)"]


def leader_of(cluster: RaftkaCluster, topic: str) -> int:
    with BlockingAdmin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        (described,) = admin.describe_topics([topic])
    return described.partitions[0].leader


def write_unregistered_transactional_batch(cluster: RaftkaCluster, topic: str,
                                           transactional_id: str, age_ms: int) -> tuple[int, int]:
    """A transactional id's producer id and epoch from its coordinator, then a transactional
    batch (created `age_ms` ago) written to `topic`-0 without AddPartitionsToTxn: a Produce
    that outlived its transaction. The coordinator's transaction never names the partition,
    so no marker will end it there. Returns (producer id, epoch)."""
    with BlockingProducer({"bootstrap.servers": cluster.bootstrap_servers,
                           "transactional.id": transactional_id}) as producer:
        producer.init_transactions()
        identity = producer._core.idempotence.identity
        producer_id, epoch = identity.producer_id, identity.epoch
    created = int(time.time() * 1000) - age_ms
    batch = encode_batch([Record(None, created, None, b"lost-%d" % i) for i in range(3)],
                         producer_id=producer_id, producer_epoch=epoch, base_sequence=0,
                         is_transactional=True)
    port = cluster.info.node(leader_of(cluster, topic)).client_port
    with BlockingKafkaConnection("127.0.0.1", port, client_id="txn-cli-test") as conn:
        answer = conn.request(ApiKey.PRODUCE, {
            "transactional_id": transactional_id, "acks": -1, "timeout_ms": 30_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0,
                                                               "records": batch}]}]})
    entry = answer["responses"][0]["partition_responses"][0]
    assert entry["error_code"] == 0, entry
    return producer_id, epoch


def test_find_hanging_reports_a_transaction_no_coordinator_will_end_and_abort_clears_it(
        cluster: RaftkaCluster) -> None:
    cluster.create_topic("cli-hanging", 1, 3)
    producer_id, epoch = write_unregistered_transactional_batch(
        cluster, "cli-hanging", "cli-hanging", age_ms=3 * 60_000)
    # The transaction holds the partition's LSO at its first offset: read_committed readers
    # are stuck behind it, and no coordinator timeout will abort it.
    assert last_stable_offset(cluster, "cli-hanging") == 0
    described = table(transactions(cluster, "describe", "--transactional-id", "cli-hanging"))
    assert described[1][4] == "Empty" and described[1][8] == ""

    found = table(transactions(cluster, "find-hanging", "--topic", "cli-hanging",
                               "--max-transaction-timeout", "1"))
    assert found[0] == HANGING_HEADER
    assert [r[:6] for r in found[1:]] == [
        ["cli-hanging", "0", str(producer_id), str(epoch), "-1", "0"]]
    assert int(found[1][7]) >= 3  # its duration in minutes, from the batch's timestamp
    # By broker: the partitions with a replica there, asked of that broker.
    leader = leader_of(cluster, "cli-hanging")
    by_broker = table(transactions(cluster, "find-hanging", "--broker-id", str(leader),
                                   "--max-transaction-timeout", "1"))
    assert [r[:6] for r in by_broker[1:]] == [r[:6] for r in found[1:]]
    # Open for less than the limit: not yet a candidate.
    younger = table(transactions(cluster, "find-hanging", "--topic", "cli-hanging",
                                 "--partition", "0", "--max-transaction-timeout", "10"))
    assert younger == [HANGING_HEADER]

    aborted = transactions(cluster, "abort", "--topic", "cli-hanging", "--partition", "0",
                           "--start-offset", "0")
    assert aborted.returncode == 0, aborted.stderr
    # 3 records and the ABORT marker: the LSO reaches the log end.
    wait_for(lambda: last_stable_offset(cluster, "cli-hanging") == 4,
             "the LSO to pass the abort marker")
    assert table(transactions(cluster, "find-hanging", "--topic", "cli-hanging",
                              "--max-transaction-timeout", "1")) == [HANGING_HEADER]
    producers = table(transactions(cluster, "describe-producers", "--topic", "cli-hanging",
                                   "--partition", "0"))
    assert next(r for r in producers[1:] if r[0] == str(producer_id))[5] == "None"


def test_errors_are_one_line(cluster: RaftkaCluster) -> None:
    cluster.create_topic("cli-txn-errors", 1, 1)
    missing = transactions(cluster, "describe", "--transactional-id", "no-such-id")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.count("\n") == 1 and "no-such-id" in missing.stderr
    nothing = transactions(cluster, "abort", "--topic", "cli-txn-errors", "--partition", "0",
                           "--start-offset", "7")
    assert nothing.returncode == 1
    assert nothing.stderr.strip() == (
        "raftka transactions: could not find any open transactions starting at offset 7 on "
        "partition cli-txn-errors-0")
    both = transactions(cluster, "find-hanging")
    assert both.returncode == 1 and both.stderr.count("\n") == 1
