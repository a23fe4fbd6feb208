"""cooperative-sticky across clients, in real groups on a launcher cluster.

- librdkafka (confluent-kafka) members rebalance while members join and leave; after
  each change Raftka's assignor, fed the same subscriptions (member ids, topics, owned
  partitions), computes the assignment the group settled on.
- A mixed group (Raftka, confluent-kafka, kafka-python) where members join and leave:
  seen from the assignment callbacks, no partition is ever owned by two members, and in
  the end every partition has an owner.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterator

import pytest

from cluster.testing.waiting import wait_for
from clients.consumer import BlockingConsumer
from clients.consumer.group.assignors import CooperativeStickyAssignor, MemberSubscription
from clients.consumer.group.sticky import StickyMember, sticky_assign
from tests.compat.cluster import Cluster
from tests.compat.ownership import TP, Ledger, MemberThread, topic_partitions

confluent_kafka = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")

SETTLE_S = 60.0


class Member(MemberThread):
    """One consumer polling on its own thread until stopped (then it closes, which
    revokes through its callbacks)."""

    def __init__(self, name: str, topics: list[str], ledger: Ledger) -> None:
        super().__init__(name, ledger)
        self.topics = topics
        self.member_id: str | None = None


class ConfluentMember(Member):
    def run(self, stop: threading.Event) -> None:
        consumer = confluent_kafka.Consumer({
            "bootstrap.servers": BOOTSTRAP[0], "group.id": GROUP[0],
            "partition.assignment.strategy": "cooperative-sticky",
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
            "enable.auto.commit": False, "broker.address.family": "v4"})

        def on_assign(c: Any, parts: Any) -> None:
            self.member_id = c.memberid()
            self.assign_cb(topic_partitions(parts))

        consumer.subscribe(self.topics, on_assign=on_assign,
                           on_revoke=lambda c, parts: self.revoke_cb(topic_partitions(parts)),
                           on_lost=lambda c, parts: self.revoke_cb(topic_partitions(parts)))
        try:
            while not stop.is_set():
                consumer.poll(0.1)
        finally:
            consumer.close()


class RaftkaMember(Member):
    def run(self, stop: threading.Event) -> None:
        consumer = BlockingConsumer({
            "bootstrap.servers": BOOTSTRAP[0], "group.id": GROUP[0],
            "partition.assignment.strategy": "cooperative-sticky",
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
            "enable.auto.commit": False})
        try:
            consumer.subscribe(self.topics, on_assign=self.assign_cb,
                               on_revoke=self.revoke_cb)
            while not stop.is_set():
                consumer.poll(100)
        finally:
            consumer.close()


class KafkaPythonMember(Member):
    def run(self, stop: threading.Event) -> None:
        from kafka.consumer.subscription_state import ConsumerRebalanceListener
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor

        member = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: Any) -> None:
                member.revoke_cb(topic_partitions(revoked))

            def on_partitions_assigned(self, assigned: Any) -> None:
                member.assign_cb(topic_partitions(assigned))

            def on_partitions_lost(self, lost: Any) -> None:
                member.revoke_cb(topic_partitions(lost))

        consumer = kafka.KafkaConsumer(
            bootstrap_servers=BOOTSTRAP[0], group_id=GROUP[0],
            partition_assignment_strategy=[CooperativeStickyAssignor],
            session_timeout_ms=6000, heartbeat_interval_ms=300, enable_auto_commit=False)
        try:
            consumer.subscribe(self.topics, listener=Listener())
            while not stop.is_set():
                consumer.poll(timeout_ms=100)
        finally:
            consumer.close()


# The members' threads read these (one group per test).
BOOTSTRAP: list[str] = [""]
GROUP: list[str] = [""]


def settled(ledger: Ledger, members: list[Member], wanted: set[TP]) -> Callable[[], bool]:
    """Every partition owned, by a member subscribed to its topic, balanced among
    members with equal subscriptions."""
    def probe() -> bool:
        owner = ledger.snapshot()
        if set(owner) != wanted or not all(m.member_id for m in members
                                           if isinstance(m, ConfluentMember)):
            return False
        names = {m.name: m for m in members}
        if any(o not in names or tp[0] not in names[o].topics for tp, o in owner.items()):
            return False
        sizes = [len(ledger.of(m.name)) for m in members]
        return max(sizes) - min(sizes) <= 1 or len({tuple(m.topics) for m in members}) > 1
    return probe


def moved(before: dict[str, set[TP]], after: dict[str, set[TP]]) -> int:
    return sum(len(before.get(m, set()) - parts) for m, parts in after.items())


def raftka_view(members: list[Member], owned: dict[str, set[TP]],
                counts: dict[str, int]) -> dict[str, set[TP]]:
    """Raftka's cooperative-sticky fed the same subscriptions, through both rebalances
    (the second after the moved partitions were revoked), per member name; with the
    general assignment, which is librdkafka's only one. Also checks that Raftka's
    default (Java's constrained assignment for equal subscriptions) moves no more."""
    ids = {m.name: m.member_id or m.name for m in members}
    subs = [MemberSubscription(ids[m.name], tuple(m.topics),
                               owned_partitions=tuple(sorted(owned.get(m.name, ()))),
                               generation_id=5) for m in members]

    def both_rebalances(assignor: CooperativeStickyAssignor) -> dict[str, set[TP]]:
        first = assignor.assign(counts, subs)
        second = assignor.assign(counts, [
            MemberSubscription(s.member_id, s.topics,
                               owned_partitions=tuple(first[s.member_id]), generation_id=6)
            for s in subs])
        # The sticky assignment of the first rebalance is where the second one lands.
        direct = sticky_assign(counts, [StickyMember(s.member_id, s.topics,
                                                     s.owned_partitions, 5) for s in subs],
                               constrained=assignor.constrained)
        assert {k: set(v) for k, v in direct.items()} == {k: set(v) for k, v in second.items()}
        return {m.name: set(second[ids[m.name]]) for m in members}

    general = both_rebalances(CooperativeStickyAssignor(constrained=False))
    default = both_rebalances(CooperativeStickyAssignor())
    assert moved(owned, default) <= moved(owned, general)
    sizes = sorted(len(p) for p in default.values())
    assert len({tuple(m.topics) for m in members}) > 1 or sizes[-1] - sizes[0] <= 1
    return general


@pytest.fixture
def started() -> Iterator[list[Member]]:
    """Every member a test starts; those still running are stopped even after a failure."""
    out: list[Member] = []
    yield out
    for m in out:
        try:
            m.stop()
        except BaseException:  # the test's own outcome is what matters
            pass


def test_raftka_and_librdkafka_agree_on_cooperative_sticky(cluster: Cluster,
                                                           started: list[Member]) -> None:
    counts = {"coop-a": 4, "coop-b": 3}
    for topic, n in counts.items():
        cluster.create_topic(topic, n)
    BOOTSTRAP[0], GROUP[0] = cluster.bootstrap, "coop-compare"
    wanted = {(t, p) for t, n in counts.items() for p in range(n)}
    ledger = Ledger()
    both = ["coop-a", "coop-b"]
    members: list[Member] = []

    def change(add: list[Member] = (), remove: list[Member] = ()) -> None:  # type: ignore[assignment]
        before = {m.name: ledger.of(m.name) for m in members}
        for m in remove:
            members.remove(m)
            m.stop()
        for m in add:
            started.append(m)
            members.append(m.start())
        wait_for(settled(ledger, members, wanted), "the group to settle", SETTLE_S)
        expected = raftka_view(members, {n: p for n, p in before.items()
                                         if any(m.name == n for m in members)}, counts)
        actual = {m.name: ledger.of(m.name) for m in members}
        assert actual == expected, f"from {before} ids {[m.member_id for m in members]}"
        assert not ledger.violations, ledger.violations

    first = ConfluentMember("c1", both, ledger)
    change(add=[first, ConfluentMember("c2", both, ledger)])
    change(add=[ConfluentMember("c3", both, ledger)])
    change(remove=[first])
    # Unequal subscriptions: the general assignment.
    change(add=[ConfluentMember("c4", ["coop-a"], ledger)])
    for m in list(members):
        m.stop()


def test_mixed_group_never_shares_a_partition(cluster: Cluster,
                                              started: list[Member]) -> None:
    topic = "coop-mixed"
    cluster.create_topic(topic, 6)
    BOOTSTRAP[0], GROUP[0] = cluster.bootstrap, "coop-mixed"
    wanted = {(topic, p) for p in range(6)}
    ledger = Ledger()
    raftka = RaftkaMember("raftka", [topic], ledger)
    librdkafka = ConfluentMember("librdkafka", [topic], ledger)
    python = KafkaPythonMember("kafka-python", [topic], ledger)
    second = RaftkaMember("raftka-2", [topic], ledger)
    started.extend([raftka, librdkafka, python, second])
    members: list[Member] = [raftka.start(), librdkafka.start()]
    wait_for(settled(ledger, members, wanted), "raftka and librdkafka to share", SETTLE_S)
    members.append(python.start())
    wait_for(settled(ledger, members, wanted), "three clients to share", SETTLE_S)
    members.append(second.start())
    wait_for(settled(ledger, members, wanted), "four members to share", SETTLE_S)
    for leaving in (librdkafka, raftka):
        members.remove(leaving)
        leaving.stop()
        assert not ledger.of(leaving.name)
        wait_for(settled(ledger, members, wanted), f"the group after {leaving.name} left",
                 SETTLE_S)
    for m in members:
        m.stop()
    assert not ledger.violations, ledger.violations
