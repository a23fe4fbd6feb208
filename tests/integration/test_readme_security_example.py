"""The security worked example of docs/security.md runs as written: real openssl certificates, a node
with a SASL_SSL listener, SCRAM users and ACLs set up through the CLI; alice produces, bob
consumes in group billing, and bob may not produce."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from cluster.launcher.ports import pick_block
from cluster.testing.waiting import wait_for
from clients.net import BlockingKafkaConnection, ClientSecurity, KafkaConnectionError
from clients.net.sasl import SaslCredentials
from clients.protocol import ApiKey, KafkaError
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow

SERVER_START = "raftka server start server.properties &"
# The Raft port of a voter is its controller port plus raftka.raft.port.offset (1000).
PORT_OFFSETS = (0, 1, 1001)


def readme_blocks() -> list[str]:
    """The sh blocks of the Security page's worked example, in order."""
    text = (REPO_ROOT / "docs" / "security.md").read_text()
    start = text.index("\n## A worked example\n")
    section = text[start:text.index("\n## ", start + 1)]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def commands(block: str) -> list[str]:
    """The block's commands, one a line, continuation lines joined."""
    joined = block.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


@pytest.fixture()
def workdir(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    yield tmp_path, env


def run(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=120)


def test_readme_security_example_runs(workdir: tuple[Path, dict[str, str]]) -> None:
    directory, env = workdir
    blocks = readme_blocks()
    assert len(blocks) == 5, "certificates, config, start, users and ACLs, clients"
    base = pick_block(PORT_OFFSETS)
    client, controller = str(base), str(base + 1)
    blocks = [b.replace("9092", client).replace("9093", controller) for b in blocks]
    certificates, config, start, setup, clients = blocks
    for script in (certificates, config):
        done = run(script, directory, env)
        assert done.returncode == 0, done.stderr
    assert start.strip() == SERVER_START
    log = (directory / "server.log").open("w")
    server = subprocess.Popen(["raftka", "server", "start", "server.properties"],
                              cwd=directory, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        admin = ClientSecurity.from_config({"security.protocol": "SASL_SSL",
                                            "ssl.truststore.location": str(directory / "ca.pem")})
        wait_for(lambda: serving(int(client), admin), "the SASL_SSL listener to serve admin",
                 timeout=60)
        done = run(setup, directory, env)
        assert done.returncode == 0, done.stdout + done.stderr
        produce_as_alice, consume_as_bob, produce_as_bob = commands(clients)
        assert "alice.properties" in produce_as_alice and "bob.properties" in produce_as_bob
        produced = run(produce_as_alice, directory, env)
        assert produced.returncode == 0, produced.stderr
        consumed = run(consume_as_bob, directory, env)
        assert consumed.returncode == 0, consumed.stderr
        assert "--group billing" in consume_as_bob
        assert consumed.stdout.splitlines() == ["order-1", "order-2"]
        refused = run(produce_as_bob, directory, env)
        assert refused.returncode != 0
        errors = [line for line in refused.stderr.splitlines()
                  if "TOPIC_AUTHORIZATION_FAILED" in line]
        assert len(errors) == 1, refused.stderr
        assert "Traceback" not in refused.stderr
    finally:
        server.kill()
        server.wait(10)
        log.close()


def serving(port: int, security: ClientSecurity) -> bool:
    """Whether the node answers Metadata, as admin over SASL_SSL, with itself as controller."""
    try:
        with BlockingKafkaConnection("127.0.0.1", port, timeout=2.0, security=security,
                                     sasl=SaslCredentials("SCRAM-SHA-512", "admin",
                                                          "admin-secret")) as conn:
            body = conn.request(ApiKey.METADATA, {"topics": [],
                                                  "allow_auto_topic_creation": False,
                                                  "include_topic_authorized_operations": False})
    except (KafkaConnectionError, KafkaError, OSError):
        return False
    return body["controller_id"] >= 0 and bool(body["brokers"])
