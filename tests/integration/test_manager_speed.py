"""`raftka manager` over a cluster with 1,000 partitions and 50 consumer groups: the cluster,
topics and groups pages render complete, the console reads offsets in batches (counted on
the brokers' own request metrics), and each page's navigation timing, as the browser
measured it, is printed and saved under pytest's temporary directory (no speed is asserted:
speed targets belong in benchmarks)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Iterator

import pytest

from cluster.testing.cluster import RaftkaCluster, start_cluster
from cluster.testing.metrics import scrape
from cluster.testing.waiting import wait_for
from clients.admin import NewTopic
from clients.protocol import ErrorCode, KafkaError
from tests.integration.manager_support import chromium, free_port, start_manager, stop

TOPICS = 20
PARTITIONS = 50  # per topic: 1,000 in all
GROUPS = 50
LOADS = 3  # navigations timed per page
NEVER_S = "3600"  # no reloads or lag samples while the pages are timed

pytestmark = pytest.mark.slow


def _topic(i: int) -> str:
    return f"speed-{i:02d}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RaftkaCluster]:
    from clients.producer import BlockingProducer

    started = start_cluster(tmp_path_factory.mktemp("manager-speed"), 3)
    try:
        with started.admin() as admin:
            admin.create_topics([NewTopic(_topic(i), PARTITIONS, 1) for i in range(TOPICS)])
        for i in range(TOPICS):
            started.wait_for_isr(_topic(i), 1)
        # Two records in every partition; each group commits offset 1 on one topic's
        # partitions, so its lag is PARTITIONS.
        with BlockingProducer({"bootstrap.servers": started.bootstrap_servers,
                               "linger.ms": 20}) as producer:
            for i in range(TOPICS):
                for p in range(PARTITIONS):
                    producer.send(_topic(i), b"v", partition=p)
                    producer.send(_topic(i), b"w", partition=p)
            producer.flush(60)
        with started.admin() as admin:
            for g in range(GROUPS):
                commit = {(_topic(g % TOPICS), p): 1 for p in range(PARTITIONS)}
                # The first commit waits for the offsets topic to be created and led.
                wait_for(lambda: _committed(admin, f"speed-group-{g:02d}", commit),
                         "the group's offsets to be committed", 60, interval=0.2)
        yield started
    finally:
        started.close()


@pytest.fixture(scope="module")
def console(cluster: RaftkaCluster) -> Iterator[str]:
    # Throughput from the metrics endpoints, so the console's only ListOffsets requests
    # are the pages' own (and the lag sampler's one round at start).
    endpoints = [arg for n in cluster.node_ids
                 for arg in ("--metrics-endpoint", f"{n}={cluster.metrics_url(n)}")]
    port = free_port()
    process = start_manager(cluster.bootstrap_servers, port, "--refresh", NEVER_S,
                            "--lag-interval", NEVER_S, "--throughput-interval", NEVER_S,
                            *endpoints)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as context:
        opened = context.new_page()
        yield opened
        opened.close()


def _committed(admin: Any, group: str, offsets: dict[tuple[str, int], int]) -> bool:
    try:
        admin.alter_group_offsets(group, offsets)
    except KafkaError as exc:
        if exc.code not in (ErrorCode.COORDINATOR_NOT_AVAILABLE,
                            ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                            ErrorCode.NOT_COORDINATOR):
            raise
        return False
    return True


def _requests(cluster: RaftkaCluster, api: str) -> float:
    """How many ``api`` requests the brokers have answered, summed over nodes."""
    return sum(s.value for n in cluster.node_ids for s in scrape(cluster.metrics_url(n))
               if s.name == "kafka_network_requestmetrics_requests_total"
               and s.labels.get("request") == api)


def _timed(page: Any, url: str) -> dict[str, float]:
    """Navigate to ``url``; the browser's navigation timing, in ms from the start."""
    response = page.goto(url)
    assert response.status == 200
    page.wait_for_function("performance.getEntriesByType('navigation')[0].loadEventEnd > 0")
    return page.evaluate("""() => {
        const n = performance.getEntriesByType('navigation')[0];
        return {first_byte: n.responseStart - n.startTime,
                response_end: n.responseEnd - n.startTime,
                dom_ready: n.domContentLoadedEventEnd - n.startTime,
                load: n.loadEventEnd - n.startTime};
    }""")


def test_big_cluster_pages_render_complete_with_batched_offset_reads(
        cluster: RaftkaCluster, console: str, page: Any,
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    with cluster.admin() as admin:
        described = admin.describe_topics(None)
    replicas = sum(len(p.replicas) for t in described for p in t.partitions)
    # The lag sampler's first round (at start) is over once a group has a lag chart.
    wait_for(lambda: page.goto(console + "/groups/speed-group-00") is not None
             and page.locator("svg#lag-chart").count() == 1, "the first lag sample", 60)

    timings: dict[str, list[dict[str, float]]] = {}
    list_offsets: dict[str, float] = {}
    checks = {
        "cluster": ("/", lambda: _check_cluster(page, cluster, replicas)),
        "topics": ("/topics", lambda: _check_topics(page, len(described))),
        "groups": ("/groups", lambda: _check_groups(page)),
        "topic": (f"/topics/{_topic(0)}", lambda: _check_topic(page)),
    }
    shots = tmp_path_factory.mktemp("manager-speed-screenshots")
    for name, (path, check) in checks.items():
        before = _requests(cluster, "ListOffsets")
        timings[name] = [_timed(page, console + path)]
        list_offsets[name] = _requests(cluster, "ListOffsets") - before
        check()
        page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
        timings[name] += [_timed(page, console + path) for _ in range(LOADS - 1)]

    # Batched: one ListOffsets request per leader and offset kind (the groups page covers
    # 50 groups' 1,000 committed partitions; the topic page 50 partitions), never one per
    # partition or group. Each broker's own lag exporter also sends one to each other
    # leader every 10 s; a page's window spans at most two of its rounds, hence the slack.
    brokers = len(cluster.node_ids)
    noise = 2 * brokers * (brokers - 1)
    assert 1 <= list_offsets["groups"] <= brokers + noise < GROUPS
    assert 2 <= list_offsets["topic"] <= 2 * brokers + noise < PARTITIONS

    report = {name: {key: round(statistics.median(t[key] for t in runs), 1)
                     for key in runs[0]} for name, runs in timings.items()}
    (shots / "navigation-timing.json").write_text(json.dumps(
        {"median_ms": report, "runs_ms": timings, "list_offsets_requests": list_offsets},
        indent=2))
    with capsys.disabled():
        print(f"\nconsole navigation timing, median of {LOADS} loads (ms), "
              f"{TOPICS * PARTITIONS} partitions, {GROUPS} groups:")
        for name, figures in report.items():
            print(f"  {name:8} " + "  ".join(f"{k}={v}" for k, v in figures.items())
                  + f"  ListOffsets requests={list_offsets[name]:.0f}")


def _check_cluster(page: Any, cluster: RaftkaCluster, replicas: int) -> None:
    rows = page.locator("#brokers tr[data-broker]")
    assert rows.count() == len(cluster.node_ids)
    held = rows.evaluate_all("rows => rows.map(r => Number(r.cells[5].innerText))")
    assert sum(held) == replicas
    assert page.locator("#under-replicated").inner_text().endswith(": 0")


def _check_topics(page: Any, topics: int) -> None:
    rows = page.locator("#topics tr[data-topic]")
    assert rows.count() == topics
    counts = page.locator("#topics tr[data-topic^='speed-']").evaluate_all(
        "rows => rows.map(r => r.cells[1].innerText)")
    assert counts == [str(PARTITIONS)] * TOPICS


def _check_groups(page: Any) -> None:
    lags = page.locator("#groups tr[data-group^='speed-group-']").evaluate_all(
        "rows => rows.map(r => r.cells[3].innerText)")
    assert lags == [str(PARTITIONS)] * GROUPS


def _check_topic(page: Any) -> None:
    ends = page.locator("#partitions tr").evaluate_all(
        "rows => rows.slice(1).map(r => r.cells[5].innerText)")
    assert ends == ["2"] * PARTITIONS
