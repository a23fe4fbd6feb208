"""`raftka manager` in a real browser (Debian's chromium driven by Playwright) against a
real 3-node cluster: the cluster, topic, group, message and throughput pages, escaping of
record text, every action (a reassignment followed until done), an under-replicated
partition after a broker dies, basic auth, TLS and CSRF.

Screenshots of the main pages are saved under pytest's temporary directory."""

from __future__ import annotations

import base64
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

from cluster.testing.cluster import RaftkaCluster, start_cluster
from cluster.testing.waiting import wait_for
from tests.integration.manager_support import chromium, free_port, start_manager, status, stop

TOPIC = "manager-orders"
GROUP = "manager-billing"
# The console's default page timeout (5 s), and slack for rendering on a loaded machine.
ANSWER_S = 8

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RaftkaCluster]:
    started = start_cluster(tmp_path_factory.mktemp("manager-cluster"), 3,
                            broker_session_timeout_ms=6000)
    try:
        started.create_topic(TOPIC, partitions=3, replication_factor=3)
        yield started
    finally:
        started.close()


@pytest.fixture(scope="module")
def console(cluster: RaftkaCluster) -> Iterator[str]:
    port = free_port()
    process = start_manager(cluster.bootstrap_servers, port)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as context:
        yield context


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    opened = browser.new_page()
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("manager-screenshots")


def _produce(cluster: RaftkaCluster, records: list[tuple[bytes, bytes, list[Any]]],
             partition: int = 0) -> None:
    from clients.producer import BlockingProducer

    with BlockingProducer({"bootstrap.servers": cluster.bootstrap_servers,
                           "acks": "all"}) as producer:
        for key, value, headers in records:
            producer.send(TOPIC, value, key=key, headers=headers, partition=partition)
        producer.flush(30)


def test_cluster_page_shows_every_broker_and_the_active_controller(
        cluster: RaftkaCluster, console: str, page: Any, shots: Path) -> None:
    with cluster.admin() as admin:
        controller = admin.describe_quorum().leader_id
    page.goto(console + "/")
    for node_id in cluster.node_ids:
        row = page.locator(f"#brokers tr[data-broker='{node_id}']")
        assert row.count() == 1
        assert row.locator("td").nth(3).inner_text() == "no"
    assert page.locator("#controller").inner_text() == str(controller)
    active = page.locator("#brokers tr", has_text="active")
    assert active.get_attribute("data-broker") == str(controller)
    assert page.locator("#quorum tr").count() >= 4  # header and the three voters
    assert page.locator("#under-replicated").inner_text().endswith(": 0")
    page.screenshot(path=str(shots / "cluster.png"), full_page=True)
    page.goto(console + "/groups")  # before any group exists
    assert page.locator("#groups").inner_text().endswith("no groups")


def test_message_browser_shows_key_value_and_headers(
        cluster: RaftkaCluster, console: str, page: Any, shots: Path) -> None:
    _produce(cluster, [(b"order-17", b'{"total": 42}', [("trace-id", b"t-9001")])])
    page.goto(console + f"/topics/{TOPIC}/messages?partition=0")
    row = page.locator("#messages tr", has_text="order-17")
    assert row.count() == 1
    assert row.locator("td").nth(3).inner_text() == '{"total": 42}'
    assert row.locator("td.headers").inner_text() == "trace-id=t-9001"
    page.screenshot(path=str(shots / "messages.png"), full_page=True)
    page.goto(console + f"/topics/{TOPIC}/messages?partition=0&format=hex")
    assert page.locator("#messages tr", has_text=b"order-17".hex(" ")).count() == 1


def test_record_text_is_shown_escaped(cluster: RaftkaCluster, console: str,
                                      page: Any) -> None:
    key = "<script>window.injected = 1</script>"
    _produce(cluster, [(key.encode(), b"<b>bold?</b>", [("<i>h</i>", b"<img src=x>")])],
             partition=1)
    page.goto(console + f"/topics/{TOPIC}/messages?partition=1")
    assert page.locator("#messages td.key").last.inner_text() == key
    assert page.locator("#messages b, #messages img, #messages i").count() == 0
    assert page.locator("#messages script").count() == 0
    assert page.evaluate("typeof window.injected") == "undefined"


def test_topic_and_group_pages_show_offsets_and_lag(
        cluster: RaftkaCluster, console: str, page: Any, shots: Path) -> None:
    from clients.consumer import BlockingConsumer

    _produce(cluster, [(b"k%d" % i, b"v%d" % i, []) for i in range(5)], partition=2)
    with cluster.admin() as admin:
        end = admin.list_offsets({(TOPIC, 2): -1})[(TOPIC, 2)].offset
    with BlockingConsumer({"bootstrap.servers": cluster.bootstrap_servers,
                           "group.id": GROUP, "enable.auto.commit": False}) as consumer:
        consumer.assign([(TOPIC, 2)])
        consumer.commit({(TOPIC, 2): end - 3})

    page.goto(console + f"/topics/{TOPIC}")
    row = page.locator("#partitions tr").nth(3)  # partition 2
    cells = [row.locator("td").nth(i).inner_text() for i in range(6)]
    assert cells[0] == "2" and cells[5] == str(end) and cells[4] == "0"
    assert int(row.locator("td.size").get_attribute("data-bytes")) > 0
    assert sorted(cells[2].split(", ")) == sorted(str(n) for n in cluster.node_ids)
    page.screenshot(path=str(shots / "topic.png"), full_page=True)

    page.goto(console + "/topics")
    assert page.locator(f"#topics tr[data-topic='{TOPIC}'] td").nth(1).inner_text() == "3"
    size = page.locator(f"#topics tr[data-topic='{TOPIC}'] td.size").get_attribute("data-bytes")
    assert int(size) > 0
    page.screenshot(path=str(shots / "topics.png"), full_page=True)

    page.goto(console + "/groups")
    group_row = page.locator(f"#groups tr[data-group='{GROUP}'] td")
    assert group_row.nth(3).inner_text() == "3"
    page.screenshot(path=str(shots / "groups.png"), full_page=True)

    page.goto(console + f"/groups/{GROUP}")
    assert page.locator("#total-lag").inner_text() == "3"
    offsets = page.locator("#offsets tr", has_text=TOPIC).locator("td")
    assert [offsets.nth(i).inner_text() for i in (1, 2, 3, 4)] == [
        "2", str(end - 3), str(end), "3"]
    page.screenshot(path=str(shots / "group.png"), full_page=True)


def test_console_with_a_password_file_answers_401_without_it(
        cluster: RaftkaCluster, tmp_path: Path) -> None:
    secrets = tmp_path / "console-users"
    secrets.write_text("admin:s3cret\n")
    port = free_port()
    good = {"Authorization": "Basic " + base64.b64encode(b"admin:s3cret").decode()}
    process = start_manager(cluster.bootstrap_servers, port, "--password-file", str(secrets))
    try:
        url = f"http://127.0.0.1:{port}/"
        assert status(url) == 401
        bad = {"Authorization": "Basic " + base64.b64encode(b"admin:wrong").decode()}
        assert status(url, bad) == 401
        assert status(url, good) == 200
    finally:
        stop(process)


def test_console_with_tls_serves_https_only(cluster: RaftkaCluster, tmp_path: Path) -> None:
    import ssl

    import trustme

    ca = trustme.CA()
    issued = ca.issue_cert("127.0.0.1")
    cert, key = tmp_path / "console-cert.pem", tmp_path / "console-key.pem"
    issued.cert_chain_pems[0].write_to_path(str(cert))
    issued.private_key_pem.write_to_path(str(key))
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "broker.cli.main", "manager",
                                "--bootstrap-server", cluster.bootstrap_servers,
                                "--listen", f"127.0.0.1:{port}",
                                "--certfile", str(cert), "--keyfile", str(key)])

    def httpsstatus() -> int:
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{port}/topics", timeout=10,
                                        context=trusting) as response:
                return response.status
        except (OSError, ssl.SSLError):
            return 0

    try:
        wait_for(lambda: process.poll() is not None or httpsstatus() == 200,
                 "the console to answer over HTTPS", 60)
        assert process.poll() is None, "the console exited"
        # The same port in plaintext: no HTTP answer at all, only a failed handshake.
        assert status(f"http://127.0.0.1:{port}/topics") == 0
        with socket.create_connection(("127.0.0.1", port), timeout=10) as plain:
            plain.sendall(b"GET /topics HTTP/1.1\r\nHost: x\r\n\r\n")
            assert not plain.recv(4096).startswith(b"HTTP/")
        with pytest.raises(urllib.error.URLError):  # a client that does not trust it
            urllib.request.urlopen(f"https://127.0.0.1:{port}/", timeout=10)
    finally:
        stop(process)


def test_group_page_lists_active_members_and_their_partitions(
        cluster: RaftkaCluster, console: str, page: Any) -> None:
    from clients.consumer import BlockingConsumer

    with BlockingConsumer({"bootstrap.servers": cluster.bootstrap_servers,
                           "group.id": "manager-live", "client.id": "live-reader",
                           "auto.offset.reset": "earliest"}) as consumer:
        consumer.subscribe([TOPIC])
        wait_for(lambda: consumer.poll(200) is not None and len(consumer.assignment()) == 3,
                 "the member to get all three partitions", 60)
        page.goto(console + "/groups/manager-live")
        assert page.locator("#group-state").inner_text() == "Stable"
        member = page.locator("#members tr", has_text="live-reader").locator("td")
        assert member.nth(3).inner_text() == ", ".join(f"{TOPIC}-{p}" for p in range(3))


def test_a_missing_topic_is_an_error_page_not_a_crash(console: str, page: Any) -> None:
    response = page.goto(console + "/topics/no-such-topic")
    assert response.status == 502
    assert "no-such-topic" in page.locator("#error").inner_text()
    response = page.goto(console + f"/topics/{TOPIC}/messages?offset=abc")
    assert response.status == 400
    assert "offset must be an integer" in page.locator("#error").inner_text()


def test_message_browser_pages_and_starts_at_an_offset_or_a_time(
        cluster: RaftkaCluster, console: str, page: Any) -> None:
    from clients.producer import BlockingProducer

    topic = "manager-paging"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    with BlockingProducer({"bootstrap.servers": cluster.bootstrap_servers,
                           "acks": "all"}) as producer:
        for i in range(30):
            producer.send(topic, b"v%d" % i, key=b"k%d" % i, partition=0,
                          timestamp=1_700_000_000_000 + i * 1000)
        producer.flush(30)

    def shown() -> list[str]:
        return page.locator("#messages tr[data-offset]").evaluate_all(
            "rows => rows.map(r => r.dataset.offset)")

    page.goto(console + f"/topics/{topic}/messages?partition=0")
    assert shown() == [str(n) for n in range(10, 30)]  # the last 20 by default
    assert page.locator("#next").count() == 0
    page.click("#previous")
    assert shown() == [str(n) for n in range(0, 20)]
    page.click("#next")
    assert shown() == [str(n) for n in range(20, 30)]
    page.goto(console + f"/topics/{topic}/messages?partition=0&offset=5&limit=3")
    assert shown() == ["5", "6", "7"]
    page.goto(console + f"/topics/{topic}/messages?partition=0&limit=2"
                        f"&timestamp={1_700_000_000_000 + 14_500}")
    assert shown() == ["15", "16"]
    assert page.locator("#messages tr[data-offset='15'] td.key").inner_text() == "k15"


def _cli_total_lag(servers: str, group: str) -> int:
    out = subprocess.run([sys.executable, "-m", "broker.cli.main", "groups",
                          "--bootstrap-server", servers, "--describe", "--group", group],
                         capture_output=True, text=True, check=True).stdout
    lines = [line.split() for line in out.splitlines() if line.strip()]
    column = lines[0].index("LAG")
    return sum(int(row[column]) for row in lines[1:])


def test_lag_chart_samples_the_groups_lag_and_ends_at_the_cli_total(
        cluster: RaftkaCluster, console: str, page: Any, shots: Path) -> None:
    from clients.consumer import BlockingConsumer

    group = "manager-lagging"
    _produce(cluster, [(b"lag", b"x", [])] * 4, partition=0)
    with BlockingConsumer({"bootstrap.servers": cluster.bootstrap_servers,
                           "group.id": group, "enable.auto.commit": False}) as consumer:
        consumer.assign([(TOPIC, 0), (TOPIC, 2)])
        consumer.commit({(TOPIC, 0): 1, (TOPIC, 2): 0})
    total = _cli_total_lag(cluster.bootstrap_servers, group)
    assert total > 0

    def chart() -> Any:
        page.goto(console + f"/groups/{group}")
        svg = page.locator("svg#lag-chart")
        if svg.count() == 0 or int(svg.get_attribute("data-points")) < 2:
            return None
        return svg

    svg = wait_for(chart, "a lag chart with two samples", 60, interval=0.5)
    assert int(svg.get_attribute("data-last")) == total
    assert page.locator("#total-lag").inner_text() == str(total)
    assert svg.locator("polyline").count() == 1
    page.screenshot(path=str(shots / "group-lag-chart.png"), full_page=True)


def _raftka(servers: str, *args: str) -> str:
    return subprocess.run([sys.executable, "-m", "broker.cli.main", "topics",
                           "--bootstrap-server", servers, *args],
                          capture_output=True, text=True, check=True).stdout


def test_topic_created_in_the_console_appears_in_the_topics_list(
        cluster: RaftkaCluster, console: str, page: Any, shots: Path) -> None:
    page.goto(console + "/topics")
    page.click("#new-topic")
    page.fill("input[name=topic]", "made-in-console")
    page.fill("input[name=partitions]", "2")
    page.fill("input[name=replication_factor]", "3")
    page.fill("textarea[name=configs]", "retention.ms=3600000")
    page.click("#create-topic button")
    assert page.locator("#summary").inner_text() == (
        "Create topic made-in-console with 2 partitions, replication factor 3, "
        "configs: retention.ms=3600000")
    assert "made-in-console" not in _raftka(cluster.bootstrap_servers, "--list").split()
    page.screenshot(path=str(shots / "confirm.png"), full_page=True)
    page.click("#confirm")
    assert page.locator("#result.ok").inner_text() == "Created topic made-in-console."
    assert "made-in-console" in _raftka(cluster.bootstrap_servers, "--list").split()
    with cluster.admin() as admin:
        assert admin.describe_configs("made-in-console")["retention.ms"].value == "3600000"

    page.goto(console + "/actions/create-topic")  # again: Kafka's refusal is shown
    page.fill("input[name=topic]", "made-in-console")
    page.click("#create-topic button")
    with page.expect_navigation() as refused:
        page.click("#confirm")
    assert refused.value.status == 400
    assert "TOPIC_ALREADY_EXISTS" in page.locator("#result.bad").inner_text()


def test_partitions_added_in_the_console_show_in_describe(
        cluster: RaftkaCluster, console: str, page: Any) -> None:
    cluster.create_topic("grow-in-console", partitions=1, replication_factor=1)
    page.goto(console + "/topics/grow-in-console")
    page.fill("#add-partitions input[name=partitions]", "4")
    page.click("#add-partitions button")
    assert page.locator("#summary").inner_text() == "Raise topic grow-in-console to 4 partitions"
    page.click("#confirm")
    assert page.locator("#result.ok").count() == 1
    # The controller has committed the new partitions; the broker the CLI asks may learn of
    # them a moment later.
    wait_for(lambda: "PartitionCount: 4" in _raftka(
        cluster.bootstrap_servers, "--describe", "--topic", "grow-in-console"),
        "--describe to show 4 partitions", 30, interval=0.2)


def test_a_cross_site_form_cannot_act(cluster: RaftkaCluster, console: str,
                                      page: Any) -> None:
    # Another site's page posting a complete, confirmed form: no CSRF token, refused.
    page.set_content(f"""<form method="post" action="{console}/actions/create-topic">
        <input name="topic" value="forged"><input name="partitions" value="1">
        <input name="replication_factor" value="1"><input name="confirm" value="yes">
        <button>go</button></form>""")
    with page.expect_navigation() as forged:
        page.click("button")
    assert forged.value.status == 403
    form = b"topic=forged&partitions=1&replication_factor=1&confirm=yes&csrf=guess"
    request = urllib.request.Request(console + "/actions/create-topic", data=form)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 403
    assert "forged" not in _raftka(cluster.bootstrap_servers, "--list").split()


def _busiest(page: Any, url: str, chart_id: str) -> float:
    """The highest rate of the chart ``chart_id`` on the throughput page (0 until it has
    two points)."""
    page.goto(url)
    svg = page.locator(f"svg[id='{chart_id}']")
    if svg.count() == 0 or int(svg.get_attribute("data-points")) < 2:
        return 0.0
    return float(svg.get_attribute("data-max"))


def test_throughput_from_offsets_charts_messages_in_per_topic_and_broker(
        cluster: RaftkaCluster, console: str, page: Any, shots: Path) -> None:
    # The module's console has no metrics endpoints: rates come from log end offsets.
    with cluster.admin() as admin:
        leader = next(p.leader for p in admin.describe_topics([TOPIC])[0].partitions
                      if p.partition == 1)
    url = console + "/throughput"

    def charted() -> bool:
        _produce(cluster, [(b"t", b"x" * 100, [])] * 20, partition=1)
        return (_busiest(page, url, f"messages_in-topic-{TOPIC}") > 0
                and _busiest(page, url, f"messages_in-broker-{leader}") > 0)

    wait_for(charted, "messages in/s charted for the topic and its leader", 60, interval=0.5)
    assert "From offsets" in page.locator("#throughput-source").inner_text()
    page.screenshot(path=str(shots / "throughput-offsets.png"), full_page=True)
    page.goto(console + "/topics")
    rate = page.locator(f"#topics tr[data-topic='{TOPIC}'] td.rate").inner_text()
    assert float(rate) >= 0


def test_throughput_from_metrics_charts_bytes_in_and_out(
        cluster: RaftkaCluster, page: Any, shots: Path) -> None:
    from clients.consumer import BlockingConsumer

    endpoints = [f"{n}={cluster.metrics_url(n)}" for n in cluster.node_ids]
    port = free_port()
    process = start_manager(cluster.bootstrap_servers, port,
                             *[arg for e in endpoints for arg in ("--metrics-endpoint", e)])
    url = f"http://127.0.0.1:{port}/throughput"
    with cluster.admin() as admin:
        leader = next(p.leader for p in admin.describe_topics([TOPIC])[0].partitions
                      if p.partition == 0)
    try:
        with BlockingConsumer({"bootstrap.servers": cluster.bootstrap_servers,
                               "group.id": "manager-throughput",
                               "auto.offset.reset": "earliest"}) as consumer:
            consumer.assign([(TOPIC, 0)])

            def charted() -> bool:
                _produce(cluster, [(b"t", b"y" * 200, [])] * 20, partition=0)
                consumer.poll(200)
                return all(_busiest(page, url, chart) > 0 for chart in (
                    f"bytes_in-topic-{TOPIC}", f"bytes_out-topic-{TOPIC}",
                    f"bytes_in-broker-{leader}", f"messages_in-topic-{TOPIC}"))

            wait_for(charted, "bytes in and out charted from the metrics endpoints", 90,
                     interval=0.5)
        assert "metrics endpoints" in page.locator("#throughput-source").inner_text()
        page.screenshot(path=str(shots / "throughput-metrics.png"), full_page=True)
    finally:
        stop(process)


def test_reassignment_started_in_the_console_completes(
        cluster: RaftkaCluster, console: str, page: Any, shots: Path) -> None:
    from clients.producer import BlockingProducer

    topic = "move-in-console"
    cluster.create_topic(topic, partitions=3, replication_factor=1)
    with BlockingProducer({"bootstrap.servers": cluster.bootstrap_servers,
                           "acks": "all"}) as producer:
        for p in range(3):
            for i in range(10):
                producer.send(topic, b"m%d" % i, partition=p)
        producer.flush(30)
    with cluster.admin() as admin:
        [leaving] = admin.describe_topics([topic])[0].partitions[0].replicas
        on_leaving = [p.partition for p in admin.describe_topics([topic])[0].partitions
                      if leaving in p.replicas]

    page.goto(console + f"/topics/{topic}")
    page.uncheck(f"#reassign-partitions input[name=brokers][value='{leaving}']")
    page.click("#reassign-partitions button")
    planned = page.locator("#plan tr[data-partition]").evaluate_all(
        "rows => rows.map(r => [r.cells[0].innerText, r.cells[1].innerText, "
        "r.cells[2].innerText])")
    assert sorted(int(p) for p, _, _ in planned) == on_leaving
    assert all(now == str(leaving) and after != str(leaving) for _, now, after in planned)
    page.screenshot(path=str(shots / "reassign-plan.png"), full_page=True)
    page.click("#confirm")
    assert page.locator("#result.ok").inner_text() == (
        f"Started moving {len(on_leaving)} partitions of topic {topic}.")
    page.click("#progress")
    # The progress page reloads itself until no partition is moving.
    page.wait_for_selector("#reassignment-state[data-moving='0']", timeout=90_000)
    page.screenshot(path=str(shots / "reassign-done.png"), full_page=True)
    with cluster.admin() as admin:
        partitions = admin.describe_topics([topic])[0].partitions
        assert all(leaving not in p.replicas for p in partitions)
        assert admin.list_partition_reassignments() == []
        ends = admin.list_offsets({(topic, p): -1 for p in range(3)})
    assert [ends[(topic, p)].offset for p in range(3)] == [10, 10, 10]
    # The page's replicas come from a broker's metadata, which may trail the controller's
    # answer that the moves ended by a moment: it shows the final replicas once caught up.
    final = [", ".join(map(str, p.replicas)) for p in partitions]

    def shows_final_replicas() -> bool:
        page.reload()
        return page.locator("#moves tr[data-partition]").evaluate_all(
            "rows => rows.map(r => r.cells[1].innerText)") == final
    wait_for(shows_final_replicas, "the progress page to show the final replicas", 20,
             interval=0.5)

    # A plan the cluster refuses (no broker 99): Kafka's error, per partition.
    page.goto(console + f"/topics/{topic}")
    token = page.locator("#reassign-partitions input[name=csrf]").get_attribute("value")
    refused = page.request.post(console + "/actions/reassign-partitions", form={
        "csrf": token, "topic": topic, "plan": "0:99", "confirm": "yes"})
    assert refused.status == 400
    assert "partition 0: INVALID_REPLICA_ASSIGNMENT" in refused.text()


def _confirm(page: Any, form: str, summary: str) -> Any:
    """Submit ``form``, check the confirmation page's summary, confirm: the result."""
    page.click(f"{form} button")
    assert page.locator("#summary").inner_text() == summary
    with page.expect_navigation() as confirmed:
        page.click("#confirm")
    return confirmed.value


def test_topic_configs_test_message_leader_election_and_deletion_in_the_console(
        cluster: RaftkaCluster, console: str, page: Any, shots: Path) -> None:
    topic = "acted-on-in-console"
    cluster.create_topic(topic, partitions=2, replication_factor=3)
    page.goto(console + f"/topics/{topic}")
    page.fill("#edit-configs textarea[name=set]", "retention.ms=7200000")
    _confirm(page, "#edit-configs", f"On topic {topic}: set retention.ms=7200000")
    assert page.locator("#result.ok").inner_text() == f"Changed 1 configs of topic {topic}."
    with cluster.admin() as admin:
        assert admin.describe_configs(topic)["retention.ms"].value == "7200000"
    page.goto(console + f"/topics/{topic}")
    page.fill("#edit-configs input[name=delete]", "retention.ms")
    _confirm(page, "#edit-configs",
             f"On topic {topic}: delete retention.ms (back to its default)")
    with cluster.admin() as admin:
        assert admin.describe_configs(topic)["retention.ms"].is_default

    page.goto(console + f"/topics/{topic}")
    page.fill("#produce input[name=partition]", "1")
    page.fill("#produce input[name=key]", "console-key")
    page.fill("#produce input[name=value]", "made <here>")
    page.fill("#produce textarea[name=headers]", "source=console")
    _confirm(page, "#produce", f"Produce one record to topic {topic} (partition 1): key "
                               f"'console-key', value 'made <here>', 1 headers")
    assert page.locator("#result.ok").inner_text() == (
        f"Produced a record to {topic} partition 1 at offset 0.")
    page.goto(console + f"/topics/{topic}/messages?partition=1")
    row = page.locator("#messages tr[data-offset='0'] td")
    assert [row.nth(i).inner_text() for i in (2, 3, 4)] == [
        "console-key", "made <here>", "source=console"]

    page.goto(console + f"/topics/{topic}")
    _confirm(page, "#elect-leaders",
             f"Elect the preferred leader of every partition of topic {topic}")
    assert page.locator("#result.ok").inner_text().startswith("Preferred leaders elected: ")

    page.goto(console + f"/topics/{topic}")
    _confirm(page, "#delete-topic", f"Delete topic {topic} and all its records")
    assert page.locator("#result.ok").inner_text() == f"Deleted topic {topic}."
    assert topic not in _raftka(cluster.bootstrap_servers, "--list").split()
    page.screenshot(path=str(shots / "topic-deleted.png"), full_page=True)


def test_group_offsets_reset_and_group_deleted_in_the_console(
        cluster: RaftkaCluster, console: str, page: Any, shots: Path) -> None:
    from clients.consumer import BlockingConsumer
    from clients.producer import BlockingProducer

    topic, group = "rewind-in-console", "manager-rewind"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    with BlockingProducer({"bootstrap.servers": cluster.bootstrap_servers,
                           "acks": "all"}) as producer:
        for i in range(6):
            producer.send(topic, b"r%d" % i, partition=0)
        producer.flush(30)
    with BlockingConsumer({"bootstrap.servers": cluster.bootstrap_servers,
                           "group.id": group, "enable.auto.commit": False}) as consumer:
        consumer.assign([(topic, 0)])
        consumer.commit({(topic, 0): 6})

    page.goto(console + f"/groups/{group}")
    page.click("#group-actions")
    page.select_option("#reset-offsets select[name=to]", "offset")
    page.fill("#reset-offsets input[name=value]", "2")
    page.fill("#reset-offsets input[name=topic]", topic)
    page.click("#reset-offsets button")
    assert page.locator("#summary").inner_text() == (
        f"Reset group {group}'s offsets on topic {topic} to offset 2")
    cells = page.locator("#plan tr[data-partition] td")
    assert [cells.nth(i).inner_text() for i in range(4)] == [topic, "0", "6", "2"]
    page.screenshot(path=str(shots / "reset-offsets-plan.png"), full_page=True)
    page.click("#confirm")
    assert page.locator("#result.ok").inner_text() == (
        f"Reset group {group}'s offsets on 1 partitions.")
    with cluster.admin() as admin:
        assert admin.list_group_offsets(group) == {(topic, 0): 2}

    with BlockingConsumer({"bootstrap.servers": cluster.bootstrap_servers,
                           "group.id": group, "enable.auto.commit": False}) as member:
        member.subscribe([topic])
        wait_for(lambda: member.poll(200) is not None and member.assignment(),
                 "the member to join", 60)
        page.goto(console + f"/groups/{group}/actions")
        page.select_option("#reset-offsets select[name=to]", "earliest")
        page.click("#reset-offsets button")
        with page.expect_navigation() as refused:
            page.click("#confirm")
        assert refused.value.status == 400
        assert "its state is Stable: stop its consumers" in page.locator(
            "#result.bad").inner_text()
        page.goto(console + f"/groups/{group}/actions")
        assert _confirm(page, "#delete-group",
                        f"Delete group {group} and its committed offsets").status == 400
        assert "NON_EMPTY_GROUP" in page.locator("#result.bad").inner_text()
    with cluster.admin() as admin:
        wait_for(lambda: admin.describe_groups([group])[group].state == "Empty",
                 "the group to empty", 60)
        assert admin.list_group_offsets(group) == {(topic, 0): 2}
    page.goto(console + f"/groups/{group}/actions")
    assert _confirm(page, "#delete-group",
                    f"Delete group {group} and its committed offsets").status == 200
    assert page.locator("#result.ok").inner_text() == f"Deleted group {group}."
    with cluster.admin() as admin:
        assert group not in [g.group_id for g in admin.list_groups()]


def _in_sync(cluster: RaftkaCluster) -> bool:
    """Every partition has a leader and its whole replica set in its ISR."""
    try:
        with cluster.admin() as admin:
            described = admin.describe_topics()
    except Exception:  # a broker still catching up
        return False
    return all(p.leader >= 0 and len(p.isr) == len(p.replicas)
               for t in described for p in t.partitions)


def _healthy(console: str) -> bool:
    """The cluster page shows no under-replicated partition and no banner."""
    try:
        with urllib.request.urlopen(console + "/", timeout=ANSWER_S) as response:
            body = response.read().decode()
    except OSError:
        return False
    return 'id="under-replicated" class="ok"' in body and 'id="problems"' not in body


def test_a_broker_that_stops_answering_is_named_and_the_rest_renders(
        cluster: RaftkaCluster, console: str, page: Any, shots: Path) -> None:
    with cluster.admin() as admin:
        controller = admin.describe_quorum().leader_id
    # Not the broker the next test kills (the first that is not the controller).
    victim = [n for n in cluster.node_ids if n != controller][-1]
    cluster.pause(victim)  # SIGSTOP: its sockets still accept connections; nothing answers
    try:
        started = time.monotonic()
        page.goto(console + "/", timeout=ANSWER_S * 1000)
        assert time.monotonic() - started < ANSWER_S
        # "did not answer", or, once fenced (after its 6 s session), "is not live".
        named = page.locator("#problems li", has_text=re.compile(rf"^broker {victim}\b"))
        assert named.count() == 1, page.locator("#problems").inner_text()
        # and no other broker
        assert page.locator("#problems li", has_text=re.compile(r"^broker \d")).count() == 1
        assert page.locator("#brokers tr[data-broker]").count() == 3
        assert page.locator("#under-replicated, #offline").count() == 2
        page.screenshot(path=str(shots / "cluster-broker-silent.png"), full_page=True)
        # Fetched apart from the browser, whose cluster page may be reloading itself.
        started = time.monotonic()
        with urllib.request.urlopen(console + f"/topics/{TOPIC}", timeout=ANSWER_S) as topic:
            body = topic.read().decode()
        assert time.monotonic() - started < ANSWER_S
        partitions = re.search(r'<table id="partitions">.*?</table>', body, re.S)
        assert partitions is not None and partitions.group(0).count("<tr class=") == 3
    finally:
        cluster.resume(victim)
        # The next test starts from a cluster that is healthy, as the console sees it too
        # (every broker answering it, with metadata caught up).
        wait_for(lambda: _in_sync(cluster) and all(_healthy(console) for _ in range(3)),
                 "every partition back in sync", 90)


def test_killed_broker_shows_its_partitions_under_replicated(
        cluster: RaftkaCluster, console: str, page: Any, shots: Path) -> None:
    # Last in the module: it leaves the cluster one broker short.
    with cluster.admin() as admin:
        controller = admin.describe_quorum().leader_id
    victim = next(n for n in cluster.node_ids if n != controller)
    page.goto(console + "/")
    assert page.locator("#under-replicated.ok").count() == 1
    cluster.kill(victim)
    # The page reloads itself every REFRESH_S; the broker is fenced after its session
    # timeout (6 s), which takes it out of every ISR.
    page.wait_for_selector("#under-replicated.bad", timeout=60_000)
    assert page.locator(f"#brokers tr[data-broker='{victim}'] td").nth(3).inner_text() == "yes"
    page.screenshot(path=str(shots / "cluster-broker-down.png"), full_page=True)
    page.goto(console + "/topics")
    under = page.locator(f"#topics tr[data-topic='{TOPIC}'] td").nth(3)
    assert under.inner_text() == "3"
