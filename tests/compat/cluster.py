"""A real local cluster for client tests, started by the launcher (the code path of
scripts/bootstrap-quorum), plus blocking helpers to create topics and wait for them.

One cluster per test module keeps the client suites fast: starting three nodes takes a few
seconds, and each test uses its own topics.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

import pytest

from cluster.launcher import ClusterInfo, LauncherError, stop_quorum
from cluster.launcher.ports import bootstrap_on_free_ports
from cluster.launcher.processes import log_tail
from cluster.testing.waiting import wait_for
from clients.net import BlockingKafkaConnection, KafkaConnectionError
from clients.protocol import ApiKey, KafkaError
from clients.protocol.errors import ErrorCode

HOST = "127.0.0.1"
CLIENT_ID = "raftka-compat-tests"


class Cluster:
    """A running launcher cluster and the conveniences tests need."""

    def __init__(self, info: ClusterInfo) -> None:
        self.info = info

    @property
    def bootstrap(self) -> str:
        return self.info.bootstrap_servers

    @property
    def ports(self) -> list[int]:
        return [node.client_port for node in self.info.brokers if node.client_port]

    @property
    def port(self) -> int:
        return self.ports[0]

    def port_of(self, node_id: int) -> int:
        port = self.info.node(node_id).client_port
        assert port is not None
        return port

    def data_dir(self, node_id: int) -> Path:
        return Path(self.info.node(node_id).properties["log.dirs"].split(",")[0])

    def logs(self, lines: int = 30) -> str:
        return "\n".join(f"--- node {node.node_id} ---\n{log_tail(node, lines)}"
                         for node in self.info.nodes)

    def request(self, api_key: int, body: dict[str, Any], version: int | None = None,
                port: int | None = None, timeout: float = 10.0) -> dict[str, Any]:
        """One request on a fresh connection to `port` (default: the first broker)."""
        with BlockingKafkaConnection(HOST, port or self.port, client_id=CLIENT_ID,
                                     timeout=timeout) as conn:
            return conn.request(api_key, body, version)

    def metadata(self, topics: list[str] | None, port: int | None = None,
                 version: int | None = None, allow_auto_create: bool = False) -> dict[str, Any]:
        return self.request(ApiKey.METADATA, {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": allow_auto_create,
            "include_topic_authorized_operations": False}, version=version, port=port)

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     configs: Mapping[str, str] | None = None, timeout: float = 20.0) -> None:
        """CreateTopics (retrying retriable errors), then wait until every broker's Metadata
        shows each partition with a leader, so clients find it at once."""
        deadline = time.monotonic() + timeout
        attempts = 0
        while True:
            attempts += 1
            try:
                response = self.request(ApiKey.CREATE_TOPICS, {
                    "topics": [{"name": name, "num_partitions": partitions,
                                "replication_factor": replication_factor, "assignments": [],
                                "configs": [{"name": k, "value": v}
                                            for k, v in (configs or {}).items()]}],
                    "timeout_ms": 10_000, "validate_only": False}, timeout=15.0)
            except (KafkaConnectionError, KafkaError, OSError):
                response = None
            if response is not None:
                result = response["topics"][0]
                code = ErrorCode(result["error_code"])
                if code == ErrorCode.NONE or (code == ErrorCode.TOPIC_ALREADY_EXISTS
                                              and attempts > 1):
                    break
                if not code.retriable:
                    pytest.fail(f"CreateTopics {name}: {code.name} {result.get('error_message')}")
            if time.monotonic() >= deadline:
                pytest.fail(f"CreateTopics {name} did not succeed in {timeout:g} s")
            time.sleep(0.1)
        self.wait_for_leaders(name, partitions, timeout)

    def wait_for_leaders(self, name: str, partitions: int, timeout: float = 20.0) -> None:
        def ready_everywhere() -> bool:
            for port in self.ports:
                topic = self.metadata([name], port=port)["topics"][0]
                if topic["error_code"] != 0 or len(topic["partitions"]) != partitions:
                    return False
                if any(p["leader_id"] < 0 for p in topic["partitions"]):
                    return False
            return True

        wait_for(ready_everywhere, f"topic {name} to have leaders on every broker", timeout)

    def leader_of(self, name: str, partition: int = 0) -> int:
        topic = self.metadata([name])["topics"][0]
        return next(p["leader_id"] for p in topic["partitions"]
                    if p["partition_index"] == partition)


@contextmanager
def running_cluster(directory: Path, nodes: int = 3,
                    overrides: Mapping[str, str] | None = None) -> Iterator[Cluster]:
    """bootstrap_quorum on free ports of the test range (picking again when a port is
    taken); every node is SIGKILLed afterwards, which keeps teardown fast."""
    info = bootstrap_on_free_ports(directory / "cluster", nodes, 0, overrides, timeout=45.0)
    try:
        yield Cluster(info)
    finally:
        try:
            stop_quorum(info.dir, kill=True, timeout=10.0)
        except LauncherError:
            pass
