"""`raftka reassign-partitions` on a real four-broker cluster: a topic on brokers 1-3 is
moved onto broker 4 by --generate / --execute --throttle / --verify with its records intact
and Kafka's throttle configs set, then removed; --list and --cancel act on a move held back
by a throttle; bad input gets one clear line (and the controller's own error code when the
tool's checks are bypassed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from cluster.testing.waiting import wait_for
from clients.admin import BlockingAdmin
from clients.admin.operations import NewTopic
from clients.protocol.errors import ErrorCode
from tests.compat.cluster import Cluster, running_cluster
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow

RECORDS = 300


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("reassign"), nodes=4) as running:
        yield running


def raftka(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "broker.cli.main", *args], capture_output=True,
                          text=True, timeout=90, cwd=REPO_ROOT, stdin=subprocess.DEVNULL)


def reassign(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return raftka("reassign-partitions", "--bootstrap-server", cluster.bootstrap, *args)


def admin(cluster: Cluster) -> BlockingAdmin:
    return BlockingAdmin({"bootstrap.servers": cluster.bootstrap})


def create_on_first_three(cluster: Cluster, topic: str, partitions: int,
                          record_bytes: int = 10, records: int = RECORDS) -> None:
    """A topic whose partitions all live on brokers 1, 2 and 3, with `records` records."""
    from confluent_kafka import Producer

    assignment = {p: [1 + (p + i) % 3 for i in range(3)] for p in range(partitions)}
    with admin(cluster) as client:
        client.create_topics([NewTopic(topic, replica_assignments=assignment)])
    cluster.wait_for_leaders(topic, partitions)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                         "enable.idempotence": True})
    for i in range(records):
        producer.produce(topic, value=f"record-{i}".encode().ljust(record_bytes, b"."),
                         partition=i % partitions)
    assert producer.flush(30) == 0


def replicas_of(cluster: Cluster, topic: str) -> dict[int, tuple[int, ...]]:
    with admin(cluster) as client:
        [description] = client.describe_topics([topic])
    return {p.partition: tuple(p.replicas) for p in description.partitions}


def count_records(cluster: Cluster, topic: str) -> int:
    result = raftka("console-consumer", "--bootstrap-server", cluster.bootstrap, "--topic",
                    topic, "--from-beginning", "--max-messages", str(RECORDS),
                    "--timeout-ms", "20000")
    assert result.returncode == 0, result.stderr
    return len(result.stdout.splitlines())


def verify_until_done(cluster: Cluster, plan: Path) -> str:
    def finished() -> str | None:
        result = reassign(cluster, "--verify", "--reassignment-json-file", str(plan))
        assert result.returncode == 0, result.stderr
        return None if "still in progress" in result.stdout else result.stdout

    return wait_for(finished, "the reassignment to complete", 90, interval=0.5)


def test_a_generated_plan_moves_a_topic_onto_the_fourth_broker(cluster: Cluster,
                                                               tmp_path: Path) -> None:
    create_on_first_three(cluster, "growing", partitions=4)
    topics = tmp_path / "topics.json"
    topics.write_text('{"version":1,"topics":[{"topic":"growing"}]}')

    generated = reassign(cluster, "--generate", "--topics-to-move-json-file", str(topics),
                         "--broker-list", "2,3,4")
    assert (generated.returncode, generated.stderr) == (0, "")
    lines = generated.stdout.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert json.loads(lines[1]) == {"version": 1, "partitions": [
        {"topic": "growing", "partition": p, "replicas": list(r), "log_dirs": ["any"] * 3}
        for p, r in sorted(replicas_of(cluster, "growing").items())]}
    assert lines[2:4] == ["", "Proposed partition reassignment configuration"]
    proposed = json.loads(lines[4])["partitions"]
    assert all(sorted(p["replicas"]) == [2, 3, 4] for p in proposed)
    plan = tmp_path / "plan.json"
    plan.write_text(lines[4])

    current = replicas_of(cluster, "growing")
    executed = reassign(cluster, "--execute", "--reassignment-json-file", str(plan),
                        "--throttle", "50000000")
    assert (executed.returncode, executed.stderr) == (0, "")
    assert executed.stdout.splitlines()[0] == "Current partition replica assignment"
    assert "Warning: You must run --verify periodically" in executed.stdout
    assert "The inter-broker throttle limit was set to 50000000 B/s" in executed.stdout
    assert "Save this to use as the --reassignment-json-file option during rollback" \
        in executed.stdout
    assert executed.stdout.splitlines()[-1] == ("Successfully started partition reassignments "
                                                "for growing-0,growing-1,growing-2,growing-3")
    # Kafka's throttles: every current replica sends, every new one receives, and every
    # broker involved gets the rate; they stay until --verify sees the move done.
    targets = {p["partition"]: set(p["replicas"]) for p in proposed}
    with admin(cluster) as client:
        topic = client.describe_configs("growing")
        assert topic["leader.replication.throttled.replicas"].value == ",".join(sorted(
            f"{p}:{b}" for p, replicas in current.items() for b in replicas))
        assert topic["follower.replication.throttled.replicas"].value == ",".join(sorted(
            f"{p}:{b}" for p, replicas in targets.items() for b in replicas - set(current[p])))
        for broker in (1, 2, 3, 4):
            rates = client.describe_broker_configs(broker)
            assert rates["leader.replication.throttled.rate"].value == "50000000"
            assert rates["follower.replication.throttled.rate"].value == "50000000"

    status = verify_until_done(cluster, plan)
    assert status.splitlines() == ["Status of partition reassignment:"] + [
        f"Reassignment of partition growing-{p} is completed." for p in range(4)] + [
        "Clearing broker-level throttles on brokers 1,2,3,4",
        "Clearing topic-level throttles on topic growing",
        "Throttle was removed."]
    with admin(cluster) as client:
        topic = client.describe_configs("growing")
        assert topic["leader.replication.throttled.replicas"].is_default
        assert topic["follower.replication.throttled.replicas"].is_default
        for broker in (1, 2, 3, 4):
            rates = client.describe_broker_configs(broker)
            assert rates["leader.replication.throttled.rate"].is_default
            assert rates["follower.replication.throttled.rate"].is_default
    assert replicas_of(cluster, "growing") == {p["partition"]: tuple(p["replicas"])
                                               for p in proposed}
    wait_for(lambda: not any(cluster.data_dir(1).glob("growing-*")),
             "broker 1 to delete its copies", 30)
    assert count_records(cluster, "growing") == RECORDS
    listed = reassign(cluster, "--list")
    assert listed.stdout == "No partition reassignments found.\n"


def test_list_shows_a_slow_move_and_cancel_puts_the_replicas_back(cluster: Cluster,
                                                                    tmp_path: Path) -> None:
    # 3 MB behind a 20 kB/s throttle: past the first fetch (at most replica.fetch.max.bytes,
    # 1 MiB), the move takes minutes, far longer than the commands below.
    create_on_first_three(cluster, "slow", partitions=1, record_bytes=2000, records=1500)
    before = replicas_of(cluster, "slow")
    plan = tmp_path / "plan.json"
    plan.write_text('{"version":1,"partitions":[{"topic":"slow","partition":0,'
                    '"replicas":[2,3,4]}]}')
    executed = reassign(cluster, "--execute", "--reassignment-json-file", str(plan),
                        "--throttle", "20000")
    assert (executed.returncode, executed.stderr) == (0, "")

    listed = reassign(cluster, "--list").stdout.splitlines()
    assert listed[0] == "Current partition reassignments:"
    assert listed[1].startswith("slow-0: replicas: ")
    assert listed[1].endswith(" adding: 4. removing: 1.")
    again = reassign(cluster, "--execute", "--reassignment-json-file", str(plan))
    assert again.returncode == 1
    assert again.stderr.startswith("Error: Cannot execute because there is an existing "
                                   "partition assignment.")
    status = reassign(cluster, "--verify", "--reassignment-json-file", str(plan)).stdout
    assert "Reassignment of partition slow-0 is still in progress." in status
    assert "Throttle was removed." not in status

    cancelled = reassign(cluster, "--cancel", "--reassignment-json-file", str(plan))
    assert (cancelled.returncode, cancelled.stderr) == (0, "")
    assert cancelled.stdout.splitlines()[0] == \
        "Successfully cancelled partition reassignment for: slow-0"
    assert cancelled.stdout.splitlines()[-1] == "Throttle was removed."
    # The original replicas again (in the union's order, as Kafka's revert leaves them).
    assert sorted(replicas_of(cluster, "slow")[0]) == sorted(before[0])
    assert reassign(cluster, "--list").stdout == "No partition reassignments found.\n"
    with admin(cluster) as client:
        assert client.describe_configs("slow")["follower.replication.throttled.replicas"] \
            .is_default


@pytest.fixture(scope="module")
def fixed_topic(cluster: Cluster) -> str:
    cluster.create_topic("fixed", partitions=1, replication_factor=3)
    return "fixed"


@pytest.mark.parametrize(("content", "message"), [
    ('{"version":1,"partitions":[{"topic":"fixed","partition":0,"replicas":[1,9]}]}',
     "Error: Unknown broker id 9"),
    ('{"version":1,"partitions":[{"topic":"fixed","partition":0,"replicas":[1,2,1]}]}',
     "Error: Partition replica lists may not contain duplicate entries: fixed-0 contains "
     "multiple entries for 1"),
    ('{"version":1,"partitions":[{"topic":"fixed","partition":0,"replicas":[1,2]',
     "Error: The input string is not a valid JSON: Expecting ',' delimiter at line 1 column"),
])
def test_bad_input_gets_one_clear_line_and_changes_nothing(
        cluster: Cluster, fixed_topic: str, tmp_path: Path, content: str,
        message: str) -> None:
    before = replicas_of(cluster, "fixed")
    plan = tmp_path / "bad.json"
    plan.write_text(content)
    result = reassign(cluster, "--execute", "--reassignment-json-file", str(plan))
    assert result.returncode == 1
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(message)
    assert replicas_of(cluster, "fixed") == before


def test_generate_names_a_topic_that_does_not_exist(cluster: Cluster, tmp_path: Path) -> None:
    topics = tmp_path / "topics.json"
    topics.write_text('{"version":1,"topics":[{"topic":"nosuch"}]}')
    result = reassign(cluster, "--generate", "--topics-to-move-json-file", str(topics),
                      "--broker-list", "1,2,3")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "Error: Topic nosuch not found.\n"


def test_the_controller_answers_bad_targets_with_kafkas_error_codes(cluster: Cluster) -> None:
    cluster.create_topic("refused", partitions=1, replication_factor=2)
    with admin(cluster) as client:
        results = client.alter_partition_reassignments({("refused", 0): [1, 9]})
        assert [(r.topic, r.partition, r.error_code) for r in results] == [
            ("refused", 0, ErrorCode.INVALID_REPLICA_ASSIGNMENT)]
        results = client.alter_partition_reassignments({("refused", 0): [2, 2]})
        assert [r.error_code for r in results] == [ErrorCode.INVALID_REPLICA_ASSIGNMENT]
        results = client.alter_partition_reassignments({("refused", 7): [1, 2]})
        assert [r.error_code for r in results] == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
