"""What a new user of the console tools sees when something is wrong: one line and a
non-zero exit for each error, no lost records, no log floods, no silent hangs or successes
(each a `raftka` subprocess against the CLI tests' cluster, or against a dead port)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from cluster.launcher import ClusterInfo
from clients.producer import BlockingProducer
from tests.integration.quorum_helpers import start_cluster  # noqa: F401  (fixture)
from tests.integration.test_cli_tools import cluster  # noqa: F401  (the shared cluster)
from cluster.testing.waiting import wait_for

pytestmark = pytest.mark.slow

RAFTKA = str(Path(sys.executable).parent / "raftka")


@pytest.fixture(scope="module")
def bootstrap(cluster: ClusterInfo) -> str:
    return cluster.bootstrap_servers


@pytest.fixture
def dead_server() -> str:
    """An address where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"127.0.0.1:{port}"


def raftka(*args: str, stdin: bytes | str = b"", timeout: float = 60
           ) -> subprocess.CompletedProcess[str]:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    done = subprocess.run([RAFTKA, *args], input=data, capture_output=True, timeout=timeout)
    return subprocess.CompletedProcess(done.args, done.returncode,
                                       done.stdout.decode(errors="replace"),
                                       done.stderr.decode(errors="replace"))


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a failed command."""
    assert result.returncode != 0, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def create_topic(bootstrap: str, topic: str, partitions: int = 1, *configs: str) -> None:
    args = ["topics", "--bootstrap-server", bootstrap, "--create", "--topic", topic,
            "--partitions", str(partitions), "--replication-factor", "1"]
    for config in configs:
        args += ["--config", config]
    created = raftka(*args)
    assert created.returncode == 0, created.stderr


def consume(bootstrap: str, topic: str, count: int, *properties: str) -> list[str]:
    args = ["console-consumer", "--bootstrap-server", bootstrap, "--topic", topic,
            "--from-beginning", "--max-messages", str(count), "--timeout-ms", "10000"]
    for prop in properties:
        args += ["--property", prop]
    consumed = raftka(*args)
    assert consumed.returncode == 0, consumed.stderr
    return consumed.stdout.splitlines()


def test_console_producer_delivers_the_lines_around_a_record_too_large_for_the_topic(
        bootstrap: str) -> None:
    create_topic(bootstrap, "small", 1, "max.message.bytes=2000")
    produced = raftka("console-producer", "--bootstrap-server", bootstrap, "--topic", "small",
                      stdin="ok1\n" + "x" * 8192 + "\nok2\n")
    line = one_error_line(produced)
    assert line.startswith("Error when sending message to topic small: MESSAGE_TOO_LARGE")
    assert consume(bootstrap, "small", 2) == ["ok1", "ok2"]


def test_a_line_over_max_request_size_fails_alone_in_one_line(bootstrap: str) -> None:
    create_topic(bootstrap, "big-line")
    produced = raftka("console-producer", "--bootstrap-server", bootstrap, "--topic",
                      "big-line", stdin="before\n" + "y" * (2 << 20) + "\nafter\n")
    line = one_error_line(produced)
    assert "MESSAGE_TOO_LARGE" in line and "max.request.size" in line, line
    assert consume(bootstrap, "big-line", 2) == ["before", "after"]


def test_a_line_without_the_key_separator_stops_in_one_line_after_sending_the_others(
        bootstrap: str) -> None:
    create_topic(bootstrap, "keyed-lines")
    produced = raftka("console-producer", "--bootstrap-server", bootstrap, "--topic",
                      "keyed-lines", "--property", "parse.key=true",
                      stdin="k1\tv1\nno separator here\nk3\tv3\n")
    assert one_error_line(produced) == (
        "raftka console-producer: No key separator found on line number 2: "
        "'no separator here'")
    assert consume(bootstrap, "keyed-lines", 1, "print.key=true") == ["k1\tv1"]


def test_console_consumer_on_a_missing_topic_fails_in_one_line(bootstrap: str) -> None:
    consumed = raftka("console-consumer", "--bootstrap-server", bootstrap, "--topic",
                      "no-such-topic", "--timeout-ms", "1000")
    line = one_error_line(consumed)
    assert line.startswith("raftka console-consumer: UNKNOWN_TOPIC_OR_PARTITION"), line
    assert "no-such-topic" in line


def test_debug_log_level_adds_the_traceback(bootstrap: str) -> None:
    consumed = raftka("--log-level", "debug", "console-consumer", "--bootstrap-server",
                      bootstrap, "--topic", "no-such-topic", "--timeout-ms", "1000")
    assert consumed.returncode == 1
    assert "Traceback (most recent call last)" in consumed.stderr
    assert consumed.stderr.splitlines()[-1].startswith(
        "raftka console-consumer: UNKNOWN_TOPIC_OR_PARTITION")


def test_a_partition_the_topic_lacks_is_an_error_not_a_silent_success(
        bootstrap: str) -> None:
    create_topic(bootstrap, "five", 5)
    consumed = raftka("console-consumer", "--bootstrap-server", bootstrap, "--topic", "five",
                      "--partition", "9", "--timeout-ms", "1000")
    assert consumed.returncode == 1
    assert one_error_line(consumed) == (
        "raftka console-consumer: --partition 9: topic 'five' has no partition 9 "
        "(its partitions are 0 to 4)")


def test_bad_numbers_name_the_option_or_key(bootstrap: str) -> None:
    not_int = raftka("console-consumer", "--bootstrap-server", bootstrap, "--topic", "five",
                     "--partition", "x")
    assert not_int.returncode == 2
    assert one_error_line(not_int) == (
        "raftka console-consumer: argument --partition: invalid int value: 'x' "
        "(see raftka console-consumer --help)")
    bad_key = raftka("console-consumer", "--bootstrap-server", bootstrap, "--topic", "five",
                     "--consumer-property", "fetch.max.bytes=lots")
    line = one_error_line(bad_key)
    assert line == ("raftka console-consumer: invalid value 'lots' for configuration "
                    "'fetch.max.bytes': expected an integer")


def test_print_headers_uses_kafkas_format(bootstrap: str) -> None:
    create_topic(bootstrap, "with-headers")
    with BlockingProducer({"bootstrap.servers": bootstrap}) as producer:
        producer.send("with-headers", b"v1", key=b"k1", headers=[("h1", b"a"), ("h2", b"b")])
        producer.send("with-headers", b"v2", headers=[("h3", None)])
        producer.send("with-headers", b"v3")
        producer.flush(30)
    assert consume(bootstrap, "with-headers", 3, "print.headers=true", "print.key=true") == [
        "h1:a,h2:b\tk1\tv1", "h3:null\tnull\tv2", "NO_HEADERS\tnull\tv3"]
    assert consume(bootstrap, "with-headers", 1, "print.headers=true",
                   "headers.separator=;", "headers.key.separator==") == ["h1=a;h2=b\tv1"]


def test_dead_bootstrap_server_fails_in_one_line(dead_server: str) -> None:
    consumed = raftka("console-consumer", "--bootstrap-server", dead_server, "--topic", "t")
    line = one_error_line(consumed)
    assert line.startswith(f"raftka console-consumer: no broker reachable at {dead_server}: "), line
    for command in (["groups", "--list"], ["topics", "--list"], ["broker-api-versions"]):
        # The admin tools retry an unreachable cluster until --timeout-ms, as Kafka's do.
        line = one_error_line(raftka(*command, "--bootstrap-server", dead_server,
                                     "--timeout-ms", "500"))
        assert f"no broker reachable at {dead_server}: " in line and "timeout expired" in line, line


def test_console_producer_against_a_dead_server_says_so_once_then_gives_up(
        dead_server: str) -> None:
    produced = raftka("console-producer", "--bootstrap-server", dead_server, "--topic", "t",
                      "--producer-property", "max.block.ms=3000", stdin="a\nb\n")
    assert produced.returncode == 1
    warning, error = produced.stderr.splitlines()  # exactly two lines, not one per retry
    assert warning.startswith("metadata refresh failed")
    assert f"no broker reachable at {dead_server}: " in warning
    assert error == ("raftka console-producer: REQUEST_TIMED_OUT (7): topic 't' not present "
                     "in metadata after 3000 ms")


def run_until_stderr_says(args: list[str], text: str, tmp_path: Path,
                          timeout: float) -> str:
    """Start a `raftka` command that would run forever, wait until its stderr contains
    ``text``, then end it; returns the stderr."""
    log = tmp_path / "stderr.txt"
    with log.open("wb") as err:
        process = subprocess.Popen([RAFTKA, *args], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=err)
    try:
        wait_for(lambda: text in log.read_text(errors="replace"), f"{text!r} on stderr",
                 timeout)
        assert process.poll() is None, "it should keep retrying"
    finally:
        process.terminate()
        process.wait(10)
    return log.read_text(errors="replace")


def test_group_consumer_against_a_dead_server_reports_it_instead_of_hanging(
        dead_server: str, tmp_path: Path) -> None:
    stderr = run_until_stderr_says(
        ["console-consumer", "--bootstrap-server", dead_server, "--topic", "t", "--group",
         "g"], "no broker reachable", tmp_path, timeout=30)
    assert stderr.startswith(
        f"group g has no coordinator after 0 s: no broker reachable at {dead_server}: ")
    # A bounded rate, not a line per retry; the SIGTERM that ends it prints the total.
    assert stderr.splitlines()[1:] == ["Processed a total of 0 messages"]


def test_group_consumer_says_when_the_group_can_get_no_coordinator(
        start_cluster, tmp_path: Path) -> None:
    # One broker cannot host __consumer_offsets replicated three times.
    cluster = start_cluster(nodes=1, overrides={"offsets.topic.replication.factor": "3"})
    bootstrap = cluster.info.bootstrap_servers
    create_topic(bootstrap, "t")
    stderr = run_until_stderr_says(
        ["console-consumer", "--bootstrap-server", bootstrap, "--topic", "t", "--group", "g"],
        "offsets.topic.replication.factor", tmp_path, timeout=30)
    assert "group g has no coordinator" in stderr and "COORDINATOR_NOT_AVAILABLE" in stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_makes_the_group_consumer_commit_and_leave(
        bootstrap: str, tmp_path: Path, signum: int) -> None:
    topic = group = f"leave-on-{signal.Signals(signum).name.lower()}"
    create_topic(bootstrap, topic)
    producer = raftka("console-producer", "--bootstrap-server", bootstrap, "--topic", topic,
                      stdin="a\nb\n")
    assert producer.returncode == 0, producer.stderr
    out = tmp_path / "out.txt"
    with out.open("wb") as stdout:
        # A session far longer than the deadline below: only leaving can empty the group.
        process = subprocess.Popen(
            [RAFTKA, "console-consumer", "--bootstrap-server", bootstrap, "--topic", topic,
             "--group", group, "--from-beginning",
             "--consumer-property", "session.timeout.ms=45000"],
            stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: out.read_text().splitlines() == ["a", "b"], "both records printed", 30)
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    assert stderr.decode().splitlines() == ["Processed a total of 2 messages"]

    def state() -> str:
        return raftka("groups", "--bootstrap-server", bootstrap, "--describe", "--group",
                      group, "--state").stdout

    wait_for(lambda: "Empty" in state(), "the group empty after its only member left", 10)
    offsets = raftka("groups", "--bootstrap-server", bootstrap, "--describe", "--group", group)
    rows = [line.split() for line in offsets.stdout.splitlines()]
    # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...: both records committed
    assert [row[1:6] for row in rows if row[:2] == [group, topic]] == [[topic, "0", "2", "2",
                                                                        "0"]]
