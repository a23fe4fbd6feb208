"""The pytest plugin, as another project uses it: its tests (confluent-kafka code, the
README's example among them) ask for ``raftka_cluster`` by name, found through the
``pytest11`` entry point; clusters are gone after the run, even after a failed test."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

pytest_plugins = ("pytester",)

pytest.importorskip("confluent_kafka")

# A test module in the style of an application's own suite: nothing Raftka-specific but
# the fixture.
APPLICATION_TESTS = '''
import json
import os

import confluent_kafka

PIDS = os.environ["PLUGIN_PIDS_FILE"]


def record_pids(cluster):
    with open(PIDS, "a") as out:
        out.write(json.dumps([cluster.pid(n) for n in cluster.node_ids]) + "\\n")


def produce(servers, topic, values):
    producer = confluent_kafka.Producer({"bootstrap.servers": servers, "acks": "all",
                                         "broker.address.family": "v4"})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0


def consume(servers, topic, count):
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": servers, "group.id": "orders-service",
        "auto.offset.reset": "earliest", "broker.address.family": "v4"})
    consumer.subscribe([topic])
    got = []
    try:
        for _ in range(600):
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
            if len(got) == count:
                break
    finally:
        consumer.close()
    return got


def test_orders_survive_a_broker_restart(raftka_cluster):
    started = []

    def factory(**config):
        started.append(raftka_cluster(**config))
        return started[-1]

    readme_example(factory)       # produces o1 to "orders", restarts node 2
    cluster = started[0]
    record_pids(cluster)
    produce(cluster.bootstrap_servers, "orders", [b"o2"])
    cluster.pause(3)
    assert cluster.pid(3) is not None
    cluster.resume(3)
    cluster.wait_for_isr("orders")
    produce(cluster.bootstrap_servers, "orders", [b"o3"])
    assert sorted(consume(cluster.bootstrap_servers, "orders", 3)) == [b"o1", b"o2", b"o3"]
    cluster.kill(1)
    assert cluster.running() == [2, 3]


def test_a_failing_test_still_tears_down(raftka_cluster):
    cluster = raftka_cluster(nodes=1, num_partitions=2)
    record_pids(cluster)
    cluster.create_topic("t")
    cluster.pause(1)
    assert False, "this test fails on purpose"


def test_session_clusters_are_shared(raftka_session_cluster):
    first = raftka_session_cluster(nodes=1)
    record_pids(first)
    assert raftka_session_cluster(nodes=1) is first
'''


def readme_example() -> str:
    """The documented plugin example (docs/python-api.md), as a helper the application's test
    runs first."""
    section = (REPO_ROOT / "docs" / "python-api.md").read_text().split(
        "## Clusters in your tests", 1)[1]
    example = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert "def test_orders(raftka_cluster):" in example
    return example.replace("def test_orders(", "def readme_example(") + "\n\n"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped) counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_an_application_suite_uses_the_fixture(pytester: pytest.Pytester,
                                               tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    pids_file = tmp_path / "pids"
    monkeypatch.setenv("PLUGIN_PIDS_FILE", str(pids_file))
    pytester.makepyfile(test_orders=readme_example() + APPLICATION_TESTS)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    started = [pid for line in pids_file.read_text().splitlines() for pid in json.loads(line)]
    assert len(started) == 3 + 1 + 1 and all(started)
    assert [pid for pid in started if alive(pid)] == []
