"""Consumer groups when things go wrong, on real clusters started as scripts/bootstrap-quorum
starts them: the coordinator killed, a member frozen, `__consumer_offsets` compacted and
reloaded, too few brokers to create it, and requests sent to the wrong broker."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from broker.group.routing import CONSUMER_OFFSETS_TOPIC, partition_for_group
from clients.net import BlockingKafkaConnection
from clients.protocol import ApiKey
from clients.protocol.errors import ErrorCode
from clients.records.header import iter_batches
from tests.integration.quorum_helpers import (
    CONSUMER,
    HOST,
    QuorumCluster,
    create_topics,
    metadata,
    partition_views,
    produce,
    send,
    start_cluster,  # noqa: F401  (fixture)
    wait_for,
)

pytestmark = pytest.mark.slow

OFFSETS_PARTITIONS = 3
GROUPS = {"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000",
          "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
          "offsets.topic.replication.factor": "3"}


def bootstrap(cluster: QuorumCluster, without: int | None = None) -> str:
    return ",".join(f"{HOST}:{cluster.client_port(n)}" for n in cluster.broker_ids
                    if n != without)


def find_coordinator(cluster: QuorumCluster, group: str, ask: int) -> dict[str, Any] | None:
    response = send(cluster.client_port(ask), ApiKey.FIND_COORDINATOR,
                    {"key": group, "key_type": 0}, 3)
    return response if response is not None and response["error_code"] == 0 else None


def coordinator_of(cluster: QuorumCluster, group: str, ask: int, timeout: float = 30.0,
                   not_node: int | None = None) -> int:
    """The coordinator node `ask` names for `group` (waiting until it names one that is not
    `not_node`)."""
    def probe() -> int | None:
        found = find_coordinator(cluster, group, ask)
        if found is None or found["node_id"] == not_node:
            return None
        return int(found["node_id"])
    return wait_for(probe, timeout, f"a coordinator for {group}", details=cluster.logs)


def fetch_committed(cluster: QuorumCluster, node: int, group: str, topic: str,
                    partitions: int) -> dict[int, int] | None:
    """Committed offsets from `node`, or None while it cannot answer for the group."""
    response = send(cluster.client_port(node), ApiKey.OFFSET_FETCH, {
        "group_id": group, "require_stable": True,
        "topics": [{"name": topic, "partition_indexes": list(range(partitions))}]}, 7)
    if response is None or response["error_code"] != 0:
        return None
    parts = response["topics"][0]["partitions"]
    if any(p["error_code"] for p in parts):
        return None
    return {p["partition_index"]: p["committed_offset"] for p in parts}


def consume_until(consumer: Any, got: list[bytes], done: Callable[[], bool], what: str,
                  timeout: float = 60.0) -> None:
    def probe() -> bool:
        message = consumer.poll(0.1)
        if message is not None and not message.error():
            got.append(message.value())
        return done()
    wait_for(probe, timeout, what, interval=0)


def commit_until_accepted(consumer: Any, timeout: float = 60.0) -> None:
    """A synchronous commit, retried while the coordinator moves."""
    from confluent_kafka import KafkaException

    def probe() -> bool:
        try:
            consumer.commit(asynchronous=False)
            return True
        except KafkaException:
            consumer.poll(0.1)
            return False
    wait_for(probe, timeout, "an accepted offset commit", interval=0)


# --- coordinator failover ------------------------------------------------------------------

# The member must outlive the coordinator's move: the old one is fenced after the broker
# session (3 s here), then the offsets partition's new leader loads the group and restarts each
# member's session clock. On a loaded machine that takes well over CONSUMER's 6 s, after which
# librdkafka drops its own assignment and re-reads uncommitted records. A session much longer
# than the move keeps the member (what the test is about) without bounding how long it takes.
SURVIVING_MEMBER = {**CONSUMER, "session.timeout.ms": 45000}
FAILOVER_TIMEOUT_S = 90.0


def test_killing_the_coordinator_moves_the_group_with_its_offsets(start_cluster):
    from confluent_kafka import Consumer

    cluster = start_cluster(nodes=3, overrides=GROUPS)
    create_topics(cluster.client_port(1), {"fo": (3, 3)})
    first = [b"first-%d" % i for i in range(30)]
    produce(bootstrap(cluster), "fo", first, 3)
    consumer = Consumer({"bootstrap.servers": bootstrap(cluster), "group.id": "fo",
                         **SURVIVING_MEMBER})
    consumer.subscribe(["fo"])
    got: list[bytes] = []
    consume_until(consumer, got, lambda: set(first) <= set(got), "the first 30 records",
                  timeout=FAILOVER_TIMEOUT_S)
    consumer.commit(asynchronous=False)
    old = coordinator_of(cluster, "fo", 1)
    committed = fetch_committed(cluster, old, "fo", "fo", 3)
    assert committed == {0: 10, 1: 10, 2: 10}

    cluster.kill(old)
    survivor = next(n for n in cluster.broker_ids if n != old)
    new = coordinator_of(cluster, "fo", survivor, not_node=old, timeout=FAILOVER_TIMEOUT_S)
    assert new != old
    intact = wait_for(lambda: fetch_committed(cluster, new, "fo", "fo", 3), FAILOVER_TIMEOUT_S,
                      "the new coordinator to serve the group's offsets", details=cluster.logs)
    assert intact == committed

    # The live member carries on through the new coordinator without re-reading anything.
    second = [b"second-%d" % i for i in range(15)]
    produce(bootstrap(cluster, without=old), "fo", second, 3)
    later: list[bytes] = []
    consume_until(consumer, later, lambda: set(second) <= set(later), "the next 15 records",
                  timeout=FAILOVER_TIMEOUT_S)
    commit_until_accepted(consumer, timeout=FAILOVER_TIMEOUT_S)
    assert sorted(later) == sorted(second)
    assert fetch_committed(cluster, new, "fo", "fo", 3) == {0: 15, 1: 15, 2: 15}
    consumer.close()

    # A new member resumes from the commits the new coordinator holds.
    third = [b"third-%d" % i for i in range(6)]
    produce(bootstrap(cluster, without=old), "fo", third, 3)
    resumed = Consumer({"bootstrap.servers": bootstrap(cluster, without=old), "group.id": "fo",
                        **CONSUMER})
    resumed.subscribe(["fo"])
    last: list[bytes] = []
    consume_until(resumed, last, lambda: len(last) >= len(third), "the last 6 records",
                  timeout=FAILOVER_TIMEOUT_S)
    resumed.close()
    assert sorted(last) == sorted(third)


# --- session timeout -----------------------------------------------------------------------

MEMBER_SCRIPT = textwrap.dedent("""
    import json, sys
    from confluent_kafka import Consumer
    consumer = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                         "session.timeout.ms": int(sys.argv[3]), "heartbeat.interval.ms": 200,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([sys.argv[4]])
    shown = None
    while True:
        consumer.poll(0.1)
        owned = sorted(p.partition for p in consumer.assignment())
        if owned != shown:
            shown = owned
            print(json.dumps(owned), flush=True)
""")


class PrintedAssignment:
    """The latest assignment the member process printed, read without blocking."""

    def __init__(self, process: subprocess.Popen) -> None:
        assert process.stdout is not None
        self._fd = process.stdout.fileno()
        self._pending = b""
        self.latest: list[int] | None = None

    def refresh(self) -> list[int] | None:
        while select.select([self._fd], [], [], 0)[0]:
            chunk = os.read(self._fd, 65536)
            if not chunk:
                break
            self._pending += chunk
        *lines, self._pending = self._pending.split(b"\n")
        for line in lines:
            self.latest = json.loads(line)
        return self.latest


@pytest.fixture
def member_process() -> Iterator[Callable[..., subprocess.Popen]]:
    started: list[subprocess.Popen] = []

    def start(*args: str) -> subprocess.Popen:
        process = subprocess.Popen([sys.executable, "-c", MEMBER_SCRIPT, *args],
                                   stdout=subprocess.PIPE)
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()
        process.wait(10)


def test_a_stopped_member_is_removed_after_its_session_timeout(start_cluster, member_process):
    from confluent_kafka import Consumer

    session_ms = 3000
    cluster = start_cluster(nodes=3, overrides=GROUPS)
    create_topics(cluster.client_port(1), {"st": (4, 3)})
    servers = bootstrap(cluster)
    frozen = member_process(servers, "st", str(session_ms), "st")
    consumer = Consumer({"bootstrap.servers": servers, "group.id": "st",
                         "session.timeout.ms": session_ms, "heartbeat.interval.ms": 200,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["st"])
    printed = PrintedAssignment(frozen)

    def two_each() -> bool:
        consumer.poll(0.1)
        mine = {p.partition for p in consumer.assignment()}
        # The same generation on both sides: each owns the two the other does not.
        return len(mine) == 2 and printed.refresh() == sorted(set(range(4)) - mine)

    wait_for(two_each, 60, "each member to own two of the four partitions", interval=0)

    frozen.send_signal(signal.SIGSTOP)
    stopped_at = time.monotonic()
    wait_for(lambda: consumer.poll(0.1) is None and len(consumer.assignment()) == 4, 60,
             "the remaining member to take over all four partitions", interval=0)
    # Its last heartbeat went out at most heartbeat.interval.ms before the stop.
    assert time.monotonic() - stopped_at >= (session_ms - 200) / 1000 - 0.1
    coordinator = coordinator_of(cluster, "st", 1)
    described = send(cluster.client_port(coordinator), ApiKey.DESCRIBE_GROUPS,
                     {"groups": ["st"], "include_authorized_operations": False}, 5)
    assert described is not None
    assert len(described["groups"][0]["members"]) == 1
    assert described["groups"][0]["group_state"] == "Stable"

    values = [b"after-%d" % i for i in range(8)]
    produce(servers, "st", values, 4)
    got: list[bytes] = []
    consume_until(consumer, got, lambda: set(values) <= set(got), "records of all partitions")
    consumer.close()


# --- compaction and reload -----------------------------------------------------------------

def records_on_disk(partition_dir: Path) -> int | None:
    """Records in every segment of a partition directory (None if a segment is mid-swap)."""
    try:
        total = 0
        for segment in sorted(partition_dir.glob("*.log")):
            data = segment.read_bytes()
            total += sum(header.records_count for _, header in iter_batches(data, verify_crc=False))
        return total
    except (OSError, ValueError):
        return None


def test_offsets_topic_compacts_and_a_restart_loads_the_latest_offsets(start_cluster):
    cluster = start_cluster(nodes=3, overrides={
        **GROUPS, "offsets.topic.segment.bytes": "4096", "log.cleaner.backoff.ms": "200"})
    create_topics(cluster.client_port(1), {"cc": (2, 3)})
    coordinator = coordinator_of(cluster, "cc", 1)
    commits = 400
    with BlockingKafkaConnection(HOST, cluster.client_port(coordinator), client_id="cc",
                                 timeout=10) as conn:
        for i in range(commits):
            response = conn.request(ApiKey.OFFSET_COMMIT, {
                "group_id": "cc", "generation_id_or_member_epoch": -1, "member_id": "",
                "topics": [{"name": "cc", "partitions": [
                    {"partition_index": i % 2, "committed_offset": i,
                     "committed_leader_epoch": -1, "committed_metadata": f"commit {i}"}]}]}, 8)
            assert response["topics"][0]["partitions"][0]["error_code"] == 0
    latest = {0: commits - 2, 1: commits - 1}
    assert fetch_committed(cluster, coordinator, "cc", "cc", 2) == latest

    partition = partition_for_group("cc", OFFSETS_PARTITIONS)
    data_dir = Path(cluster.node(coordinator).properties["log.dirs"].split(",")[0])
    log_dir = data_dir / f"{CONSUMER_OFFSETS_TOPIC}-{partition}"
    assert len(list(log_dir.glob("*.log"))) > 3, "the small segment size should roll often"
    remaining = wait_for(lambda: (n := records_on_disk(log_dir)) is not None
                         and n < commits // 4 and n, 60,
                         "the cleaner to compact __consumer_offsets", details=cluster.logs)
    assert remaining < commits // 4

    cluster.kill_all()
    cluster.start_nodes(cluster.broker_ids)
    reloaded = coordinator_of(cluster, "cc", cluster.broker_ids[0], timeout=60)
    assert wait_for(lambda: fetch_committed(cluster, reloaded, "cc", "cc", 2), 60,
                    "the offsets after the restart", details=cluster.logs) == latest


# --- creating __consumer_offsets -----------------------------------------------------------

def offsets_topic(cluster: QuorumCluster, node: int) -> dict[tuple[str, int], Any]:
    response = metadata(cluster.client_port(node))
    views = {} if response is None else partition_views(response)
    return {k: v for k, v in views.items() if k[0] == CONSUMER_OFFSETS_TOPIC}


def test_offsets_topic_is_not_created_with_fewer_live_brokers_than_its_replication(
        start_cluster):
    cluster = start_cluster(nodes=3, overrides=GROUPS)
    cluster.terminate(3)
    wait_for(lambda: len((metadata(cluster.client_port(1)) or {}).get("brokers", [])) == 2, 30,
             "node 3 to leave the live brokers")
    answer = send(cluster.client_port(1), ApiKey.FIND_COORDINATOR, {"key": "early", "key_type": 0}, 3)
    assert answer is not None
    assert answer["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert answer["error_message"] == (f"{CONSUMER_OFFSETS_TOPIC} cannot be created: 2 live "
                                       "broker(s), offsets.topic.replication.factor is 3")
    # Auto-creation through Metadata is refused by the controller as well.
    send(cluster.client_port(2), ApiKey.METADATA, {
        "topics": [{"name": CONSUMER_OFFSETS_TOPIC}], "allow_auto_topic_creation": True,
        "include_topic_authorized_operations": False})
    wait_for(lambda: "auto-creating topic __consumer_offsets failed" in cluster.log_text(2), 30,
             "the refused auto-creation in node 2's log", details=cluster.logs)
    assert offsets_topic(cluster, 1) == {}

    cluster.restart(3)
    node = coordinator_of(cluster, "early", 1, timeout=60)
    views = offsets_topic(cluster, 1)
    assert len(views) == OFFSETS_PARTITIONS
    assert all(len(v.replicas) == 3 for v in views.values())
    assert node in {v.leader for v in views.values()}


# --- routing -------------------------------------------------------------------------------

def test_find_coordinator_batches_and_other_brokers_answer_not_coordinator(start_cluster):
    cluster = start_cluster(nodes=3, overrides=GROUPS)
    create_topics(cluster.client_port(1), {"rt": (1, 3)})
    coordinator_of(cluster, "warm-up", 1, timeout=60)
    groups = [f"group-{i}" for i in range(12)]
    leaders = wait_for(lambda: (views := offsets_topic(cluster, 2)) and len(views) == 3
                       and all(v.leader >= 0 for v in views.values()) and views, 30,
                       "every __consumer_offsets partition led")
    expected = {g: leaders[(CONSUMER_OFFSETS_TOPIC, partition_for_group(g, 3))].leader
                for g in groups}
    assert len(set(expected.values())) > 1, "the groups should spread over coordinators"
    configs = send(cluster.client_port(1), ApiKey.DESCRIBE_CONFIGS, {"resources": [{
        "resource_type": 2, "resource_name": CONSUMER_OFFSETS_TOPIC,
        "configuration_keys": ["cleanup.policy", "segment.bytes"]}]})
    assert configs is not None
    assert {c["name"]: c["value"] for c in configs["results"][0]["configs"]} == {
        "cleanup.policy": "compact", "segment.bytes": "104857600"}
    assert all(len(v.replicas) == 3 for v in leaders.values())

    def batched() -> dict[str, int] | None:
        response = send(cluster.client_port(3), ApiKey.FIND_COORDINATOR,
                        {"key_type": 0, "coordinator_keys": groups}, 4)
        if response is None or any(c["error_code"] for c in response["coordinators"]):
            return None
        return {c["key"]: c["node_id"] for c in response["coordinators"]}

    assert wait_for(batched, 30, "one FindCoordinator v4 answering every key") == expected
    group = groups[0]
    owner = expected[group]
    commit = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
              "topics": [{"name": "rt", "partitions": [
                  {"partition_index": 0, "committed_offset": 7, "committed_leader_epoch": -1,
                   "committed_metadata": ""}]}]}
    for node in cluster.broker_ids:
        port = cluster.client_port(node)
        joined = send(port, ApiKey.JOIN_GROUP, {
            "group_id": group, "session_timeout_ms": 6000, "rebalance_timeout_ms": 6000,
            "member_id": "", "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}]}, 9)
        committed = send(port, ApiKey.OFFSET_COMMIT, commit, 8)
        fetched = send(port, ApiKey.OFFSET_FETCH, {"group_id": group, "topics": None}, 7)
        heartbeat = send(port, ApiKey.HEARTBEAT, {"group_id": group, "generation_id": 1,
                                                  "member_id": "m"}, 4)
        assert joined and committed and fetched and heartbeat
        codes = (joined["error_code"], committed["topics"][0]["partitions"][0]["error_code"],
                 fetched["error_code"], heartbeat["error_code"])
        if node == owner:
            assert codes == (ErrorCode.MEMBER_ID_REQUIRED, 0, 0, ErrorCode.UNKNOWN_MEMBER_ID)
        else:
            assert codes == (ErrorCode.NOT_COORDINATOR,) * 4, node
