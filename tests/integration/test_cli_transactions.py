"""`raftka transactions` (kafka-transactions.sh) against a real cluster with an open
transaction: list, describe, describe-producers, find-hanging (an ongoing transaction the
coordinator knows is not hanging), abort --start-offset (the leader writes the ABORT marker:
read_committed readers move past the data), and one-line errors."""

from __future__ import annotations

import subprocess
import sys
from typing import Iterator

import pytest

from broker.testing.cluster import RaftkaCluster, start_cluster
from broker.testing.waiting import wait_for
from clients.admin import BlockingAdmin
from clients.producer import BlockingProducer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RaftkaCluster]:
    with start_cluster(tmp_path_factory.mktemp("txn-cli"), 3,
                       transaction_state_log_num_partitions=3) as started:
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
