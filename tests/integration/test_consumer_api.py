"""Raftka's consumer API on a real cluster: seed 004's offset-reset table, asynchronous
commits with callbacks, interceptors and deserializers, pause/resume, offsets by time,
and the graceful exit through ``wakeup`` from a signal handler."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path
from typing import Any, Callable

import pytest

from cluster.testing import RaftkaCluster
from cluster.testing.waiting import wait_for
from clients.net import BlockingKafkaConnection
from clients.consumer import BlockingConsumer, NoOffsetForPartitionError, WakeupException
from clients.producer import BlockingProducer
from clients.protocol import ApiKey

TOPIC = "api"
RECORDS = 5
BASE_TS = 1_700_000_000_000


@pytest.fixture(scope="module")
def cluster(raftka_session_cluster: Callable[..., RaftkaCluster]) -> RaftkaCluster:
    """A one-node cluster from the project's own pytest plugin, with TOPIC filled."""
    started = raftka_session_cluster(nodes=1)
    started.create_topic(TOPIC, 2)
    with BlockingProducer({"bootstrap.servers": started.bootstrap_servers}) as producer:
        for i in range(RECORDS):
            for p in (0, 1):
                producer.send(TOPIC, json.dumps({"i": i}).encode(), key=b"k%d" % i,
                              partition=p, timestamp=BASE_TS + i * 1000)
        producer.flush()
    return started


def consumer(cluster: RaftkaCluster, group: str, **config: Any) -> BlockingConsumer:
    return BlockingConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                             "enable.auto.commit": False},
                            **config)


def read(c: BlockingConsumer, count: int, timeout_s: float = 30.0) -> list[Any]:
    got: list[Any] = []

    def more() -> bool:
        got.extend(c.poll(200))
        return len(got) >= count
    wait_for(more, f"{count} records", timeout_s)
    return got


# ---- seed 004's table: where a consumer starts ----

@pytest.mark.parametrize("reset, committed, first", [
    ("earliest", None, 0),
    ("latest", None, RECORDS),
    ("none", None, None),            # no committed offset and no policy: an error
    ("earliest", 3, 3),              # a committed offset wins over any policy
    ("latest", 3, 3),
    ("none", 3, 3),
])
def test_offset_reset_table(cluster: RaftkaCluster, reset: str, committed: int | None,
                            first: int | None) -> None:
    group = f"reset-{reset}-{committed}"
    tp = (TOPIC, 0)
    if committed is not None:
        with consumer(cluster, group) as c:
            c.commit({tp: committed})
    with consumer(cluster, group, auto_offset_reset=reset) as c:
        c.assign([tp])
        if first is None:
            with pytest.raises(NoOffsetForPartitionError):
                wait_for(lambda: c.poll(200) and False, "the reset error", 30)
            return
        assert c.position(tp) == first
        if first < RECORDS:
            assert read(c, 1)[0].offset == first


# ---- commits, interceptors, deserializers ----

class Recorder:
    def __init__(self) -> None:
        self.consumed: list[int] = []
        self.commits: list[dict[Any, int]] = []
        self.closed = False

    def on_consume(self, records: list[Any]) -> list[Any]:
        self.consumed.extend(r.offset for r in records)
        return [r for r in records if r.value["i"] != 0]   # interceptors may filter

    def on_commit(self, offsets: dict[Any, int]) -> None:
        self.commits.append(offsets)

    def close(self) -> None:
        self.closed = True


def test_async_commit_callback_interceptor_and_deserializers(cluster: RaftkaCluster) -> None:
    recorder = Recorder()
    tp = (TOPIC, 1)
    done: list[tuple[dict[Any, int], BaseException | None]] = []
    with consumer(cluster, "async-commit", auto_offset_reset="earliest",
                  value_deserializer="json", key_deserializer="str",
                  interceptor_classes=[recorder]) as c:
        c.assign([tp])
        records = read(c, RECORDS - 1)
        assert [r.value for r in records] == [{"i": i} for i in range(1, RECORDS)]
        assert records[0].key == "k1"
        assert recorder.consumed == list(range(RECORDS))
        c.commit(asynchronous=True, callback=lambda offsets, error: done.append((offsets, error)))
        wait_for(lambda: c.poll(50) == [] and done, "the commit callback", 30)
        assert done == [({tp: RECORDS}, None)]
        assert recorder.commits == [{tp: RECORDS}]
        assert c.committed([tp]) == {tp: RECORDS}
    assert recorder.closed


def test_pause_and_resume(cluster: RaftkaCluster) -> None:
    with consumer(cluster, "pause", auto_offset_reset="earliest") as c:
        c.assign([(TOPIC, 0), (TOPIC, 1)])
        c.pause([(TOPIC, 1)])
        assert c.paused() == [(TOPIC, 1)]
        records = read(c, RECORDS)
        assert {r.partition for r in records} == {0}
        assert c.poll(300) == []         # partition 0 is read out; 1 stays paused
        c.resume([(TOPIC, 1)])
        assert c.paused() == []
        assert {r.partition for r in read(c, RECORDS)} == {1}


def test_offsets_by_time_and_ends(cluster: RaftkaCluster) -> None:
    tp = (TOPIC, 0)
    with consumer(cluster, "times") as c:
        assert c.beginning_offsets([tp]) == {tp: 0}
        assert c.end_offsets([tp]) == {tp: RECORDS}
        found = c.offsets_for_times({tp: BASE_TS + 2500, (TOPIC, 1): BASE_TS + 10**9})
        assert found == {tp: (3, BASE_TS + 3000), (TOPIC, 1): None}


# ---- the graceful exit of seed 004 ----

def test_wakeup_from_a_signal_handler_ends_the_poll_loop(cluster: RaftkaCluster) -> None:
    c = consumer(cluster, "wakeup", auto_offset_reset="earliest",
                 session_timeout_ms=6000, heartbeat_interval_ms=500)
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: c.wakeup())
    everything = threading.Event()
    kill = threading.Thread(target=lambda: everything.wait(60)
                            and os.kill(os.getpid(), signal.SIGUSR1))
    kill.start()
    seen = 0
    try:
        c.subscribe([TOPIC])
        with pytest.raises(WakeupException):
            while True:
                seen += len(c.poll(60_000))
                if seen >= 2 * RECORDS:
                    everything.set()     # the next poll blocks until the signal
        c.commit()
    finally:
        signal.signal(signal.SIGUSR1, previous)
        everything.set()
        c.close()
        kill.join()
    assert seen == 2 * RECORDS
    with consumer(cluster, "wakeup") as check:
        assert check.committed([(TOPIC, 0), (TOPIC, 1)]) == {(TOPIC, 0): RECORDS,
                                                             (TOPIC, 1): RECORDS}
        host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
        with BlockingKafkaConnection(host, int(port), client_id="test", timeout=10) as conn:
            group = conn.request(ApiKey.DESCRIBE_GROUPS, {
                "groups": ["wakeup"], "include_authorized_operations": False})
        assert group["groups"][0]["members"] == []


def test_the_pause_api_checks_the_assignment(tmp_path: Path) -> None:
    with BlockingConsumer({"bootstrap.servers": "127.0.0.1:9"}) as c:
        with pytest.raises(ValueError, match="not assigned"):
            c.pause([("t", 0)])


def test_a_member_that_stops_polling_leaves_and_its_partitions_move(
        cluster: RaftkaCluster) -> None:
    settings = {"auto_offset_reset": "earliest", "session_timeout_ms": 6000,
                "heartbeat_interval_ms": 300, "max_poll_interval_ms": 3000}
    owned: dict[str, list[Any]] = {"idle": [], "busy": []}

    def listener(name: str) -> Callable[[list[Any]], None]:
        return lambda partitions: owned.__setitem__(name, sorted(partitions))

    with consumer(cluster, "poll-interval", **settings) as idle, \
            consumer(cluster, "poll-interval", **settings) as busy:
        idle.subscribe([TOPIC], on_assign=listener("idle"))
        busy.subscribe([TOPIC], on_assign=listener("busy"))
        wait_for(lambda: idle.poll(100) is not None and busy.poll(100) is not None
                 and len(owned["idle"]) == 1 and len(owned["busy"]) == 1,
                 "both members to get a partition", 60)
        # idle stops polling; its heartbeats go on, but after max.poll.interval.ms it
        # leaves, and busy (still polling) is given both partitions.
        wait_for(lambda: busy.poll(100) is not None and len(owned["busy"]) == 2,
                 "the partitions of the member that stopped polling", 60)


def test_a_static_member_restarted_within_its_session_keeps_its_partitions(
        cluster: RaftkaCluster) -> None:
    """group.instance.id (KIP-345): a static member closes without leaving, and a new
    process with the same instance id takes its place with no rebalance of the others."""
    settings = {"auto_offset_reset": "earliest", "session_timeout_ms": 30000,
                "heartbeat_interval_ms": 300}
    events: list[tuple[str, str, list[Any]]] = []

    def listener(name: str, kind: str) -> Callable[[list[Any]], None]:
        return lambda partitions: events.append((name, kind, sorted(partitions)))

    def join(name: str) -> BlockingConsumer:
        member = consumer(cluster, "static", **settings, group_instance_id=name)
        member.subscribe([TOPIC], on_assign=listener(name, "assigned"),
                         on_revoke=listener(name, "revoked"))
        return member

    def owns(name: str) -> list[Any]:
        assigned = [e[2] for e in events if e[:2] == (name, "assigned") and e[2]]
        return assigned[-1] if assigned else []

    with join("b") as other:
        first = join("a")
        try:
            wait_for(lambda: first.poll(100) is not None and other.poll(100) is not None
                     and len(owns("a")) == 1 and len(owns("b")) == 1,
                     "both static members to get a partition", 60)
        finally:
            first.close()
        kept, generation = owns("a"), other.group_metadata().generation_id
        events.clear()
        with join("a") as restarted:
            wait_for(lambda: restarted.poll(100) is not None and other.poll(100) is not None
                     and owns("a") == kept, "the restarted member's old partition", 30)
            # A few more rounds of heartbeats: still no rebalance for the other member.
            for _ in range(5):
                other.poll(200)
        assert other.group_metadata().generation_id == generation
        assert [e for e in events if e[0] == "b"] == []
