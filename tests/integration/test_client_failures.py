"""Clients and commands fail fast, with the real cause, against one node with a PLAINTEXT,
an SSL, a SASL_PLAINTEXT and a SASL_SSL listener (started by the launcher, the code path
of scripts/bootstrap-quorum):

- a wrong SASL password: `authentication failed` with the broker's message, in seconds;
- a client speaking another security protocol than the listener: one line naming the
  mismatch, in seconds;
- no broker reachable: `no broker reachable at <servers>` said once, early, while the
  command keeps trying until its timeout;
- `console-consumer --max-messages -1` reads without limit; a config file that is not
  UTF-8 is one line naming it; a 50 MB line reaches MESSAGE_TOO_LARGE in seconds.

Before, the producer waited max.block.ms (60 s) and the admin commands
default.api.timeout.ms (60 s) for most of these; the time bounds here are far below that
and far above what a loaded 2-core machine needs.
"""

from __future__ import annotations

import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import trustme

from cluster.launcher import ClusterInfo, LauncherError, bootstrap_quorum, stop_quorum
from cluster.launcher.layout import CONTROLLER_PORT_STEP
from cluster.launcher.ports import cluster_ports, free_ports, is_port_conflict, pick_base_port
from cluster.testing.waiting import wait_for
from clients.admin import BlockingAdmin, NewTopic
from clients.consumer import BlockingConsumer
from clients.net import AuthenticationFailedError, SecurityProtocolMismatchError
from clients.producer import BlockingProducer
from tests.integration.test_cli_first_hour import RAFTKA, raftka

pytestmark = pytest.mark.slow

HOST = "127.0.0.1"
USER, PASSWORD = "alice", "alice-secret"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        f'user_{USER}="{PASSWORD}";')
LISTENERS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
BROKER_MESSAGE = "Authentication failed: Invalid username or password"
# Generous for a loaded 2-core machine (a command's start-up alone can take 3 s), far below
# the 60 s the clients used to retry for.
FAST_S = 15.0


@dataclass
class Node:
    info: ClusterInfo
    ports: dict[str, int]   # listener name (= its security protocol) -> port
    ca: Path

    def address(self, listener: str) -> str:
        return f"{HOST}:{self.ports[listener]}"

    def client(self, protocol: str, password: str = PASSWORD) -> dict[str, str]:
        """Client settings for ``protocol`` (without bootstrap.servers)."""
        config = {"security.protocol": protocol}
        if protocol.endswith("SSL"):
            config["ssl.truststore.location"] = str(self.ca)
        if protocol.startswith("SASL"):
            config.update({"sasl.mechanism": "PLAIN", "sasl.username": USER,
                           "sasl.password": password})
        return config


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    directory = tmp_path_factory.mktemp("client-failures")
    ca = trustme.CA()
    ca_path, server_path = directory / "ca.pem", directory / "server.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    ca.issue_cert(HOST, "localhost").private_key_and_cert_chain_pem.write_to_path(
        str(server_path))
    for attempt in range(5):
        base = pick_base_port(1, 0)
        taken = set(cluster_ports(1, 0, base))
        extra = [p for p in free_ports(6) if p not in taken][:3]
        ports = dict(zip(LISTENERS, [base, *extra]))
        endpoints = ",".join(f"{name}://{HOST}:{port}" for name, port in ports.items())
        settings = {
            "listeners": f"{endpoints},CONTROLLER://{HOST}:{base + CONTROLLER_PORT_STEP}",
            "advertised.listeners": endpoints,
            "listener.security.protocol.map": ",".join(
                [f"{name}:{name}" for name in LISTENERS] + ["CONTROLLER:PLAINTEXT"]),
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
            "ssl.keystore.location": str(server_path),
        }
        try:
            info = bootstrap_quorum(directory / f"c{attempt}", 1, 0, base, settings,
                                    timeout=90)
        except LauncherError as exc:
            if is_port_conflict(exc):
                continue
            raise
        break
    else:
        raise LauncherError("no free ports for the four listeners")
    try:
        yield Node(info, ports, ca_path)
    finally:
        stop_quorum(info.dir, kill=True, timeout=10.0)


def raftka_all(*commands: tuple[list[str], str]) -> list[subprocess.CompletedProcess[str]]:
    """Run `raftka` commands (arguments, stdin) side by side; their results in order."""
    started = []
    for args, stdin in commands:
        process = subprocess.Popen([RAFTKA, *args], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        started.append((process, stdin))
    results = []
    for process, stdin in started:
        out, err = process.communicate(stdin.encode(), timeout=60)
        results.append(subprocess.CompletedProcess(process.args, process.returncode,
                                                   out.decode(errors="replace"),
                                                   err.decode(errors="replace")))
    return results


def within(seconds: float, action: Callable[[], Any]) -> Any:
    started = time.monotonic()
    result = action()
    elapsed = time.monotonic() - started
    assert elapsed < seconds, f"took {elapsed:.1f} s"
    return result


def properties_file(directory: Path, config: dict[str, str]) -> str:
    path = directory / f"client-{uuid.uuid4().hex[:8]}.properties"
    path.write_text("".join(f"{key}={value}\n" for key, value in config.items()))
    return str(path)


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The error a failed command printed: its last stderr line (a console consumer
    prints its `Processed a total` line first)."""
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert lines and "Traceback" not in result.stderr, result.stderr
    assert all(line.startswith("Processed a total") for line in lines[:-1]), result.stderr
    return lines[-1]


def client_errors(bootstrap: str, config: dict[str, str]) -> dict[str, BaseException]:
    """What the producer, the consumer and the admin client raise, each within FAST_S."""
    config = {"bootstrap.servers": bootstrap, **config}
    raised: dict[str, BaseException] = {}

    def produce() -> None:
        with BlockingProducer(config) as producer:
            producer.send("events", b"v").get(FAST_S)

    def consume() -> None:
        with BlockingConsumer(config) as consumer:
            consumer.assign([("events", 0)])
            consumer.poll(FAST_S * 2000)

    def administer() -> None:
        with BlockingAdmin(config) as admin:
            admin.list_topics()

    for name, action in (("producer", produce), ("consumer", consume),
                         ("admin", administer)):
        try:
            within(FAST_S, action)
        except AssertionError:
            raise
        except Exception as exc:  # noqa: BLE001 - the error is what is checked
            raised[name] = exc
    return raised


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_a_wrong_password_fails_every_client_within_seconds(node: Node,
                                                            listener: str) -> None:
    errors = client_errors(node.address(listener), node.client(listener, "wrong"))
    assert set(errors) == {"producer", "consumer", "admin"}, errors
    for name, error in errors.items():
        assert isinstance(error, AuthenticationFailedError), (name, error)
        assert str(error) == (f"authentication failed at {node.address(listener)} (PLAIN as "
                              f"{USER}): {BROKER_MESSAGE}"), name


def test_commands_print_a_wrong_password_in_one_line(node: Node, tmp_path: Path) -> None:
    address = node.address("SASL_PLAINTEXT")
    wrong = properties_file(tmp_path, node.client("SASL_PLAINTEXT", "wrong"))
    expected = f"authentication failed at {address} (PLAIN as {USER}): {BROKER_MESSAGE}"
    connect = ["--bootstrap-server", address, "--command-config", wrong]
    commands = (
        (["topics", "--list"], "", "Error while executing topic command : "),
        (["groups", "--list"], "", "raftka groups: "),
        (["console-producer", "--topic", "events"], "a\nb\n", "raftka console-producer: "),
        (["console-consumer", "--topic", "events"], "", "raftka console-consumer: "),
        (["console-consumer", "--topic", "events", "--group", "g"], "",
         "raftka console-consumer: "),
        (["quorum", "describe", "--status"], "", "raftka quorum: "))
    for command, stdin, prefix in commands:
        result = within(FAST_S, lambda: raftka(*command, *connect, stdin=stdin))
        assert error_line(result) == prefix + expected, command
    # With the right password the same listener serves them.
    right = properties_file(tmp_path, node.client("SASL_PLAINTEXT"))
    described = raftka("quorum", "describe", "--status", "--bootstrap-server", address,
                       "--command-config", right)
    assert described.returncode == 0, described.stderr
    assert described.stdout.startswith("ClusterId:"), described.stdout


# (client's security.protocol, listener, what the error says the listener is)
MISMATCHES = [
    ("PLAINTEXT", "SSL", "speaks TLS (an SSL or SASL_SSL listener) but security.protocol is "
                         "PLAINTEXT; use SSL or SASL_SSL"),
    ("SASL_PLAINTEXT", "SASL_SSL", "speaks TLS (an SSL or SASL_SSL listener) but "
                                   "security.protocol is SASL_PLAINTEXT; use SASL_SSL"),
    ("SSL", "PLAINTEXT", "answers without TLS (a PLAINTEXT or SASL_PLAINTEXT listener) but "
                         "security.protocol is SSL; use PLAINTEXT or SASL_PLAINTEXT"),
    ("SSL", "SASL_SSL", "is a SASL listener (mechanisms: PLAIN) but security.protocol is "
                        "SSL, which sends no credentials; use SASL_SSL with sasl.mechanism "
                        "and a user"),
    ("PLAINTEXT", "SASL_PLAINTEXT", "is a SASL listener (mechanisms: PLAIN) but "
                                    "security.protocol is PLAINTEXT, which sends no "
                                    "credentials; use SASL_PLAINTEXT with sasl.mechanism "
                                    "and a user"),
    ("SASL_PLAINTEXT", "PLAINTEXT", "refused SaslHandshake, so it is not a SASL listener, "
                                    "but security.protocol is SASL_PLAINTEXT; use PLAINTEXT"),
]


@pytest.mark.parametrize("protocol,listener,says", MISMATCHES,
                         ids=[f"{p}-on-{listener}" for p, listener, _ in MISMATCHES])
def test_a_security_protocol_mismatch_is_named_within_seconds(
        node: Node, tmp_path: Path, protocol: str, listener: str, says: str) -> None:
    address = node.address(listener)
    expected = f"security protocol mismatch: {address} {says}"
    errors = client_errors(address, node.client(protocol))
    assert set(errors) == {"producer", "consumer", "admin"}, errors
    for name, error in errors.items():
        assert isinstance(error, SecurityProtocolMismatchError), (name, error)
        assert str(error) == expected, name
    config = properties_file(tmp_path, node.client(protocol))
    listed = within(FAST_S, lambda: raftka("topics", "--list", "--bootstrap-server", address,
                                           "--command-config", config))
    assert error_line(listed) == "Error while executing topic command : " + expected


def dead_server() -> str:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return f"{HOST}:{sock.getsockname()[1]}"


def test_commands_say_at_once_that_no_broker_is_reachable_then_keep_trying(
        tmp_path: Path) -> None:
    nowhere = dead_server()
    notice = f"no broker reachable at {nowhere}: "
    # Each command's arguments, and the error line it ends with at its timeout (8 s).
    commands = {
        "topics": (["topics", "--list", "--timeout-ms", "8000"],
                   f"Error while executing topic command : {notice}"),
        "groups": (["groups", "--list", "--timeout-ms", "8000"], f"raftka groups: {notice}"),
        "console-producer": (["console-producer", "--topic", "t", "--producer-property",
                              "max.block.ms=8000"],
                             "raftka console-producer: REQUEST_TIMED_OUT (7): topic 't' not "
                             "present in metadata after 8000 ms"),
    }
    started = time.monotonic()
    running: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
    for name, (args, _) in commands.items():
        log = tmp_path / f"{name}.stderr"
        with log.open("wb") as err:
            process = subprocess.Popen([RAFTKA, *args, "--bootstrap-server", nowhere],
                                       stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                       stderr=err)
        assert process.stdin is not None
        process.stdin.write(b"a\n")
        process.stdin.close()
        running[name] = (process, log)
    said: dict[str, float] = {}     # when each command's stderr first held the notice
    ended: dict[str, float] = {}
    try:
        def all_ended() -> bool:
            for name, (process, log) in running.items():
                if name not in said and notice in log.read_text():
                    said[name] = time.monotonic()
                if name not in ended and process.poll() is not None:
                    ended[name] = time.monotonic()
            return len(ended) == len(running)
        wait_for(all_ended, "the commands to give up", timeout=60)
    finally:
        for process, _ in running.values():
            if process.poll() is None:
                process.kill()
                process.wait()
    for name, (process, log) in running.items():
        assert process.returncode == 1, name
        assert name in said, (name, log.read_text())
        # Said early (the command's start-up included), while it went on trying.
        assert said[name] - started < FAST_S, (name, said[name] - started)
        assert ended[name] - said[name] > 3, (name, ended[name] - said[name])
        # The notice once, then quiet until the command's one error line.
        notice_line, error = log.read_text().splitlines()
        assert notice in notice_line, name
        assert error.startswith(commands[name][1]), (name, error)


def test_max_messages_minus_one_reads_everything(node: Node) -> None:
    topic = f"all-{uuid.uuid4().hex[:8]}"
    with BlockingAdmin({"bootstrap.servers": node.address("PLAINTEXT")}) as admin:
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    produced = raftka("console-producer", "--bootstrap-server", node.address("PLAINTEXT"),
                      "--topic", topic, stdin="".join(f"r{i}\n" for i in range(5)))
    assert produced.returncode == 0, produced.stderr
    consumed = raftka("console-consumer", "--bootstrap-server", node.address("PLAINTEXT"),
                      "--topic", topic, "--from-beginning", "--max-messages", "-1",
                      "--timeout-ms", "3000")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.split() == [f"r{i}" for i in range(5)]
    assert "Processed a total of 5 messages" in consumed.stderr


def test_config_files_that_are_not_utf8_are_one_line_naming_the_file(tmp_path: Path) -> None:
    latin1 = tmp_path / "latin1.properties"
    data = b"security.protocol=PLAINTEXT\nclient.id=caf\xe9\n"
    latin1.write_bytes(data)
    reason = (f"{latin1}: not valid UTF-8: byte 0xe9 on line 2 (offset {data.index(0xe9)}); "
              "save the file as UTF-8")
    nowhere = dead_server()
    cases = (
        (["topics", "--list", "--bootstrap-server", nowhere, "--command-config", str(latin1)],
         f"raftka topics: --command-config: {reason}"),
        (["console-producer", "--topic", "t", "--bootstrap-server", nowhere,
          "--producer.config", str(latin1)],
         f"raftka console-producer: --producer.config: {reason}"),
        (["console-consumer", "--topic", "t", "--bootstrap-server", nowhere,
          "--consumer.config", str(latin1)],
         f"raftka console-consumer: --consumer.config: {reason}"),
        (["server", "start", str(latin1)], f"raftka server: config file: {reason}"),
        (["storage", "format", "-t", "AAAAAAAAAAAAAAAAAAAAAA", "-c", str(latin1)],
         f"raftka storage: config file: {reason}"))
    results = raftka_all(*[(args, "") for args, _ in cases])
    for (args, line), result in zip(cases, results):
        assert result.returncode == 1, (args, result.stderr)
        assert result.stderr.splitlines() == [line], args


def test_a_50_mb_line_is_refused_in_seconds_and_the_next_line_delivered(node: Node) -> None:
    topic = f"long-{uuid.uuid4().hex[:8]}"
    bootstrap = node.address("PLAINTEXT")
    with BlockingAdmin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    line = b"x" * (50 * 1024 * 1024)
    # Before, every 64 KiB read copied the pending line: minutes for this one.
    produced = within(30, lambda: raftka("console-producer", "--bootstrap-server", bootstrap,
                                         "--topic", topic, stdin=line + b"\nafter\n",
                                         timeout=90))
    assert produced.returncode == 1
    (refused,) = produced.stderr.splitlines()
    assert refused.startswith(f"Error when sending message to topic {topic}: "
                              "MESSAGE_TOO_LARGE (10): the record is "), refused
    assert refused.endswith("bytes, larger than max.request.size (1048576)"), refused
    consumed = raftka("console-consumer", "--bootstrap-server", bootstrap, "--topic", topic,
                      "--from-beginning", "--max-messages", "1", "--timeout-ms", "10000")
    assert consumed.stdout.split() == ["after"], consumed.stderr
