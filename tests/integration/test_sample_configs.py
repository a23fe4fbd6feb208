"""The sample configs shipped in config/ (a combined single node, a 3-node cluster) format,
start and serve a consumer group through the console tools, as the README shows them. The
test moves their ports to a free range and their log.dirs under tmp_path, nothing else."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from cluster.launcher.ports import pick_block
from clients.net import BlockingKafkaConnection, KafkaConnectionError
from clients.protocol import ApiKey, KafkaError
from tests.conftest import REPO_ROOT
from cluster.testing.waiting import wait_for

pytestmark = pytest.mark.slow

HOST = "127.0.0.1"
SAMPLES = REPO_ROOT / "config"
SAMPLE_BASE_PORT = 9092  # the lowest port the samples use
RAFT_PORT_OFFSET = 1000  # raftka.raft.port.offset's default, which the samples keep
DEFAULT_METRICS_PORT = 9404  # raftka.metrics.listener's default port for node 1


def raftka(*args: str, stdin: str | None = None, timeout: float = 90
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "broker.cli.main", *args], input=stdin,
                          capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT)


def moved(sample: Path, target_dir: Path, shift: int) -> Path:
    """A copy of `sample` with every 127.0.0.1 port moved by `shift` and log.dirs under
    `target_dir`."""
    text = re.sub(r"127\.0\.0\.1:(\d+)", lambda m: f"{HOST}:{int(m.group(1)) + shift}",
                  sample.read_text())
    text, count = re.subn(r"^log\.dirs=.*$", f"log.dirs={target_dir / 'data'}", text,
                          flags=re.M)
    assert count == 1, f"{sample} sets log.dirs once"
    if not re.search(r"^raftka\.metrics\.listener=", text, re.M):
        # The default metrics port (9404 + node.id - 1) moves with the others.
        node_id = int(re.search(r"^node\.id=(\d+)$", text, re.M).group(1))  # type: ignore[union-attr]
        text += f"\nraftka.metrics.listener=http://{HOST}:{DEFAULT_METRICS_PORT + node_id - 1 + shift}\n"
    target_dir.mkdir(parents=True, exist_ok=True)
    path = target_dir / sample.name
    path.write_text(text)
    return path


def ports_of(config: Path) -> list[int]:
    """Every port a node of this config binds: its listeners, its metrics listener and, for
    a voter, its Raft port."""
    text = config.read_text()
    listeners = re.search(r"^listeners=(.*)$", text, re.M)
    assert listeners is not None
    ports = [int(p) for p in re.findall(r":(\d+)", listeners.group(1))]
    node_id = re.search(r"^node\.id=(\d+)$", text, re.M)
    metrics = re.search(r"^raftka\.metrics\.listener=http://127\.0\.0\.1:(\d+)$", text, re.M)
    assert node_id is not None
    ports.append(int(metrics.group(1)) if metrics else DEFAULT_METRICS_PORT + int(node_id.group(1)) - 1)
    voters = re.search(r"^controller\.quorum\.voters=(.*)$", text, re.M)
    assert node_id is not None and voters is not None
    for voter in voters.group(1).split(","):
        voter_id, address = voter.split("@")
        if voter_id == node_id.group(1):
            ports.append(int(address.rsplit(":", 1)[1]) + RAFT_PORT_OFFSET)
    return ports


def client_port(config: Path) -> int:
    match = re.search(r"PLAINTEXT://127\.0\.0\.1:(\d+)", config.read_text())
    assert match is not None
    return int(match.group(1))


def registered_brokers(port: int) -> set[int]:
    try:
        with BlockingKafkaConnection(HOST, port, client_id="sample-configs", timeout=2) as conn:
            response = conn.request(ApiKey.METADATA, {
                "topics": [], "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False})
    except (KafkaConnectionError, KafkaError, OSError):
        return set()
    if response.get("controller_id", -1) < 0:
        return set()
    return {broker["node_id"] for broker in response["brokers"]}


@contextmanager
def started(samples: list[Path], tmp_path: Path) -> Iterator[tuple[list[Path], str]]:
    """Format (one cluster id) and start every sample, moved to a free port range; yields
    the moved configs and the bootstrap servers. SIGTERM at the end: each must exit 0."""
    cluster_id = raftka("storage", "random-uuid").stdout.strip()
    sample_ports = [port for sample in samples for port in ports_of(sample)]
    for attempt in range(8):
        shift = pick_block([port - SAMPLE_BASE_PORT for port in sample_ports]) \
            - SAMPLE_BASE_PORT
        directory = tmp_path / f"attempt-{attempt}"
        configs = [moved(sample, directory / sample.stem, shift) for sample in samples]
        for config in configs:
            formatted = raftka("storage", "format", "-t", cluster_id, "-c", str(config))
            assert formatted.returncode == 0, formatted.stderr
            assert formatted.stderr == ""  # no warning: every key of the samples is known
            info = raftka("storage", "info", "-c", str(config))
            assert info.returncode == 0, info.stderr
            assert f"cluster.id={cluster_id}" in info.stdout
        processes = []
        for config in configs:
            with open(config.parent / "server.log", "wb") as log:
                processes.append(subprocess.Popen(
                    [sys.executable, "-m", "broker.cli.main", "server", "start", str(config)],
                    stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT))
        try:
            ports = [client_port(config) for config in configs]
            expected = set(range(1, len(configs) + 1))

            def ready() -> bool:
                if any(process.poll() is not None for process in processes):
                    return True  # failed: checked below
                return all(registered_brokers(port) == expected for port in ports)

            wait_for(ready, "the sample nodes to start", timeout=60, interval=0.2)
            logs = "\n".join((c.parent / "server.log").read_text() for c in configs)
            if any(process.poll() is not None for process in processes):
                if "already in use" in logs:  # another process took a port meanwhile
                    continue
                pytest.fail(f"a sample node exited during start-up:\n{logs[-3000:]}")
            yield configs, ",".join(f"{HOST}:{port}" for port in ports)
            for process in processes:
                process.send_signal(signal.SIGTERM)
            for process, config in zip(processes, configs):
                assert process.wait(60) == 0, (config.parent / "server.log").read_text()[-3000:]
            return
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
                    process.wait(10)
    pytest.fail("no free port range found for the sample configs")


def produce_and_consume_with_a_group(bootstrap: str, topic: str) -> None:
    lines = [f"record-{n}" for n in range(20)]
    produced = raftka("console-producer", "--bootstrap-server", bootstrap, "--topic", topic,
                      stdin="\n".join(lines) + "\n")
    assert produced.returncode == 0, produced.stderr
    consume = ["console-consumer", "--bootstrap-server", bootstrap, "--topic", topic,
               "--group", f"{topic}-readers", "--from-beginning"]
    first = raftka(*consume, "--max-messages", str(len(lines)), "--timeout-ms", "60000")
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == lines
    # The group committed what it read: its next run starts after it.
    produced = raftka("console-producer", "--bootstrap-server", bootstrap, "--topic", topic,
                      stdin="after\n")
    assert produced.returncode == 0, produced.stderr
    second = raftka(*consume, "--max-messages", "1", "--timeout-ms", "60000")
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines() == ["after"]


def test_the_single_node_sample_serves_a_consumer_group(tmp_path: Path) -> None:
    sample = SAMPLES / "server.properties"
    text = sample.read_text()
    assert "offsets.topic.replication.factor=1" in text
    assert "transaction.state.log.replication.factor=1" in text
    with started([sample], tmp_path) as (configs, bootstrap):
        produce_and_consume_with_a_group(bootstrap, "single")
        log = (configs[0].parent / "server.log").read_text()
    assert "cannot be created" not in log
    assert " ERROR " not in log


def test_the_three_node_samples_serve_a_consumer_group(tmp_path: Path) -> None:
    samples = sorted((SAMPLES / "cluster").glob("node-*.properties"))
    assert [s.name for s in samples] == [f"node-{n}.properties" for n in (1, 2, 3)]
    with started(samples, tmp_path) as (configs, bootstrap):
        produce_and_consume_with_a_group(bootstrap, "three")
