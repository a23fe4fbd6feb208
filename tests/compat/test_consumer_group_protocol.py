"""The consumer group protocol (KIP-848, `group.protocol=consumer`) with librdkafka members
on a one-node launcher cluster: the coordinator splits the partitions, no partition is owned
by two members at once (seen from the assignment callbacks), a member that leaves hands its
partitions over, commits are checked against the member epoch and land, and a classic group
on the same topic keeps working beside it.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any, Iterator

import pytest

from cluster.launcher.cluster import start_node, stop_quorum
from cluster.testing.waiting import wait_for
from clients.protocol import ApiKey, ErrorCode
from tests.compat.cluster import Cluster, running_cluster
from tests.compat.ownership import TP, Ledger, MemberThread, topic_partitions

confluent_kafka = pytest.importorskip("confluent_kafka")

TOPIC = "kip848"
PARTITIONS = 6


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    overrides = {"offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "3",
                 "group.consumer.heartbeat.interval.ms": "300",
                 "group.consumer.session.timeout.ms": "6000",
                 "group.initial.rebalance.delay.ms": "0"}
    with running_cluster(tmp_path_factory.mktemp("kip848"), nodes=1,
                         overrides=overrides) as started:
        started.create_topic(TOPIC, partitions=PARTITIONS)
        yield started


class Member(MemberThread):
    """A librdkafka consumer polling on its own thread from the start; `stop` closes it (it
    leaves)."""

    def __init__(self, name: str, bootstrap: str, group: str, ledger: Ledger,
                 protocol: str = "consumer") -> None:
        super().__init__(name, ledger)
        config: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group,
                                  "group.protocol": protocol, "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest",
                                  "broker.address.family": "v4"}
        if protocol == "classic":
            config.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 300})
        self.consumer = confluent_kafka.Consumer(config)
        self.positions: dict[TP, int] = {}
        self.commits: list[Any] = []
        self._commit = threading.Event()
        self.start()

    def run(self, stop: threading.Event) -> None:
        try:
            self.consumer.subscribe(
                [TOPIC], on_assign=lambda c, p: self.assign_cb(topic_partitions(p)),
                on_revoke=lambda c, p: self.revoke_cb(topic_partitions(p)),
                on_lost=lambda c, p: self.revoke_cb(topic_partitions(p)))
            while not stop.is_set():
                message = self.consumer.poll(0.1)
                if message is not None and message.error() is None:
                    self.positions[(message.topic(), message.partition())] = message.offset() + 1
                if self._commit.is_set():
                    self._commit.clear()
                    try:
                        self.commits.append(self.consumer.commit(asynchronous=False))
                    except confluent_kafka.KafkaException as exc:
                        self.commits.append(exc)
        finally:
            self.consumer.close()

    def commit(self) -> None:
        self._commit.set()


def _describe(cluster: Cluster, group: str) -> dict[str, Any]:
    return cluster.request(ApiKey.CONSUMER_GROUP_DESCRIBE,
                           {"group_ids": [group], "include_authorized_operations": False},
                           version=0)["groups"][0]


def test_members_split_hand_over_and_commit_beside_a_classic_group(cluster: Cluster) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap,
                                         "broker.address.family": "v4"})
    for i in range(60):
        producer.produce(TOPIC, value=b"v%d" % i, partition=i % PARTITIONS)
    assert producer.flush(15) == 0
    group = f"g-{uuid.uuid4().hex[:8]}"
    classic_group = f"classic-{uuid.uuid4().hex[:8]}"
    ledger, classic_ledger = Ledger(), Ledger()
    members = [Member(f"m{i}", cluster.bootstrap, group, ledger) for i in range(3)]
    classic = Member("classic", cluster.bootstrap, classic_group, classic_ledger, "classic")
    stopped: list[Member] = []
    try:
        wait_for(lambda: sorted(ledger.counts().values()) == [2, 2, 2],
                 "three members to own two partitions each", timeout=30)
        wait_for(lambda: classic_ledger.counts() == {"classic": PARTITIONS},
                 "the classic member to own every partition", timeout=30)
        described = wait_for(lambda: (d := _describe(cluster, group))["group_state"] == "Stable"
                             and d, "the consumer group to be Stable", timeout=20)
        assert described["error_code"] == 0
        assert described["assignor_name"] == "uniform"
        assert len(described["members"]) == 3
        assert all(m["member_epoch"] == described["assignment_epoch"]
                   for m in described["members"])
        wait_for(lambda: all(m.positions.get(tp) == 10 for m in members
                             for tp, owner in ledger.owner.copy().items() if owner == m.name),
                 "every member to read its partitions to the end", 20)
        for m in members:
            m.commit()
        wait_for(lambda: all(m.commits for m in members), "every member to commit", 20)
        results = [m.commits[0] for m in members]
        assert all(isinstance(r, list) for r in results), [
            r if not isinstance(r, list) else len(r) for r in results]
        fetched = cluster.request(ApiKey.OFFSET_FETCH, {"groups": [
            {"group_id": group, "topics": None}], "require_stable": False}, version=8)
        partitions = fetched["groups"][0]["topics"][0]["partitions"]
        assert sorted(p["committed_offset"] for p in partitions) == [10] * PARTITIONS

        leaving = members.pop()
        leaving.stop()
        stopped.append(leaving)
        wait_for(lambda: sorted(ledger.counts().values()) == [3, 3],
                 "the two members left to own three partitions each", timeout=30)
        assert leaving.name not in ledger.counts()
        assert ledger.violations == []
        assert classic_ledger.counts() == {"classic": PARTITIONS}

        listed = cluster.request(ApiKey.LIST_GROUPS, {"states_filter": []}, version=4)
        types = {g["group_id"]: (g["protocol_type"], g["group_state"]) for g in listed["groups"]}
        assert types[group][0] == "consumer"
        assert types[classic_group] == ("consumer", "Stable")
        # Classic members cannot join a consumer group that has members.
        joined = cluster.request(ApiKey.JOIN_GROUP, {
            "group_id": group, "session_timeout_ms": 6000, "rebalance_timeout_ms": 6000,
            "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}], "reason": None}, version=5)
        assert joined["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    finally:
        for m in [*members, classic]:
            if m not in stopped:
                m.stop()


def _coordinated(cluster: Cluster, group: str) -> None:
    """FindCoordinator until the group's coordinator is up (it creates __consumer_offsets)."""
    def found() -> bool:
        answer = cluster.request(ApiKey.FIND_COORDINATOR, {"key": group, "key_type": 0},
                                 version=3)
        return answer["error_code"] == 0
    wait_for(found, f"a coordinator for {group}", timeout=20)
    wait_for(lambda: _describe(cluster, group)["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND,
             f"the coordinator of {group} to be loaded", timeout=20)


def test_heartbeat_errors_on_the_wire(cluster: Cluster) -> None:
    group = f"e-{uuid.uuid4().hex[:8]}"
    _coordinated(cluster, group)
    base = {"group_id": group, "member_id": uuid.uuid4().hex, "member_epoch": 0,
            "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 5000,
            "subscribed_topic_names": [TOPIC], "subscribed_topic_regex": None,
            "server_assignor": None, "topic_partitions": []}
    wrong_assignor = cluster.request(ApiKey.CONSUMER_GROUP_HEARTBEAT,
                                     {**base, "server_assignor": "sticky"}, version=1)
    assert wrong_assignor["error_code"] == ErrorCode.UNSUPPORTED_ASSIGNOR
    unknown = cluster.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, {**base, "member_epoch": 3},
                              version=1)
    assert unknown["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    joined = cluster.request(ApiKey.CONSUMER_GROUP_HEARTBEAT,
                             {**base, "subscribed_topic_names": None,
                              "subscribed_topic_regex": "kip8.*", "server_assignor": "range"},
                             version=1)
    assert joined["error_code"] == 0 and joined["member_epoch"] == 1
    assigned = joined["assignment"]["topic_partitions"]
    assert [sorted(t["partitions"]) for t in assigned] == [list(range(PARTITIONS))]
    fenced = cluster.request(ApiKey.CONSUMER_GROUP_HEARTBEAT,
                             {**base, "member_epoch": 7, "topic_partitions": None}, version=1)
    assert fenced["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH
    commit = {"group_id": group, "generation_id_or_member_epoch": 0,
              "member_id": base["member_id"], "group_instance_id": None,
              "topics": [{"name": TOPIC, "partitions": [
                  {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                   "committed_metadata": None}]}]}
    stale = cluster.request(ApiKey.OFFSET_COMMIT, commit, version=9)
    assert stale["topics"][0]["partitions"][0]["error_code"] == ErrorCode.STALE_MEMBER_EPOCH
    fresh = cluster.request(ApiKey.OFFSET_COMMIT,
                            {**commit, "generation_id_or_member_epoch": 1}, version=9)
    assert fresh["topics"][0]["partitions"][0]["error_code"] == 0
    fetched = cluster.request(ApiKey.OFFSET_FETCH, {"groups": [
        {"group_id": group, "member_id": "nobody", "member_epoch": 1, "topics": None}],
        "require_stable": False}, version=9)
    assert fetched["groups"][0]["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    kept = cluster.request(ApiKey.OFFSET_DELETE, {"group_id": group, "topics": [
        {"name": TOPIC, "partitions": [{"partition_index": 0}]}]}, version=0)
    assert kept["topics"][0]["partitions"][0]["error_code"] == ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
    classic_view = cluster.request(ApiKey.DESCRIBE_GROUPS, {"groups": [group]}, version=5)
    assert classic_view["groups"][0]["group_state"] == "Dead"
    left = cluster.request(ApiKey.CONSUMER_GROUP_HEARTBEAT,
                           {**base, "member_epoch": -1, "topic_partitions": None}, version=1)
    assert left["error_code"] == 0 and left["member_epoch"] == -1
    assert _describe(cluster, group)["group_state"] == "Empty"
    deleted = cluster.request(ApiKey.DELETE_GROUPS, {"groups_names": [group]}, version=2)
    assert deleted["results"][0]["error_code"] == 0
    assert _describe(cluster, group)["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


def _offsets_topic_end(cluster: Cluster) -> int:
    """The sum of `__consumer_offsets`' end offsets: it grows with every group write."""
    answer = cluster.request(ApiKey.LIST_OFFSETS, {
        "replica_id": -1, "isolation_level": 0, "topics": [{
            "name": "__consumer_offsets", "partitions": [
                {"partition_index": p, "current_leader_epoch": -1, "timestamp": -1}
                for p in range(3)]}]}, version=7)
    partitions = answer["topics"][0]["partitions"]
    assert all(p["error_code"] == 0 for p in partitions), partitions
    return sum(int(p["offset"]) for p in partitions)


def test_a_silent_member_is_fenced_without_any_other_request(cluster: Cluster) -> None:
    """The only member of a group stops heartbeating: after the session timeout (6 s here)
    the coordinator fences it on its own, writing the group, though no request names the
    group meanwhile (ListOffsets does not reach the group coordinator)."""
    group = f"s-{uuid.uuid4().hex[:8]}"
    _coordinated(cluster, group)
    joined = cluster.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, {
        "group_id": group, "member_id": uuid.uuid4().hex, "member_epoch": 0,
        "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 5000,
        "subscribed_topic_names": [TOPIC], "subscribed_topic_regex": None,
        "server_assignor": None, "topic_partitions": []}, version=1)
    assert joined["error_code"] == 0
    written = _offsets_topic_end(cluster)
    wait_for(lambda: _offsets_topic_end(cluster) > written,
             "the coordinator to write the fenced member's group", timeout=20)
    described = _describe(cluster, group)
    assert described["members"] == []
    assert described["group_epoch"] > joined["member_epoch"]


def test_a_restarted_coordinator_resumes_the_group(cluster: Cluster) -> None:
    """Last in the module: it restarts the node."""
    group = f"r-{uuid.uuid4().hex[:8]}"
    _coordinated(cluster, group)
    member = {"group_id": group, "member_id": uuid.uuid4().hex, "member_epoch": 0,
              "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 5000,
              "subscribed_topic_names": [TOPIC], "subscribed_topic_regex": None,
              "server_assignor": None, "topic_partitions": []}
    joined = cluster.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, member, version=1)
    assert joined["error_code"] == 0
    before = _describe(cluster, group)
    stop_quorum(cluster.info.dir, 1)
    start_node(cluster.info.dir, 1, timeout=45.0)
    _coordinated(cluster, "another-group")
    after = wait_for(lambda: (d := _describe(cluster, group))["error_code"] == 0 and d,
                     "the group to be loaded again", timeout=20)
    assert after == before
    owned = joined["assignment"]["topic_partitions"]
    again = cluster.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, {
        **member, "member_epoch": joined["member_epoch"], "rebalance_timeout_ms": -1,
        "subscribed_topic_names": None, "topic_partitions": owned}, version=1)
    assert (again["error_code"], again["member_epoch"]) == (0, joined["member_epoch"])
