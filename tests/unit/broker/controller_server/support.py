"""In-process controller voters: RaftQuorum + MetadataStateMachine + QuorumController behind a
real NetworkServer on a CONTROLLER listener, on random loopback ports."""

from __future__ import annotations

import random
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator

import trio

from broker.config import Listener
from broker.controller_server import ControllerEndpoint, QuorumController
from broker.apis.request import RequestRouter
from broker.network import NetworkServer
from clients.net import KafkaConnection
from kraft import QuorumConfig, RaftQuorum
from kraft.metadata_state_machine import MetadataStateMachine
from metadata.settings import ControllerSettings
from tests.unit.kraft.support import FAST, free_ports, wait_until

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
FAST_RAFT = {**FAST, "fsync": False}


@dataclass
class Voter:
    node_id: int
    quorum: RaftQuorum
    state: MetadataStateMachine
    controller: QuorumController
    address: tuple[str, int]
    scope: trio.CancelScope
    stopped: bool = False


@dataclass
class Quorum:
    """The running voters of one test; `stop(id)` takes one down for good."""

    voters: dict[int, Voter] = field(default_factory=dict)

    def running(self) -> list[Voter]:
        return [v for v in self.voters.values() if not v.stopped]

    def ready_leader(self) -> Voter | None:
        return next((v for v in self.running() if v.quorum.status().is_ready), None)

    async def leader(self, timeout: float = 15.0) -> Voter:
        return await wait_until(self.ready_leader, timeout, "a ready leader")

    def followers(self) -> list[Voter]:
        return [v for v in self.running() if not v.quorum.status().is_leader]

    async def stop(self, node_id: int) -> None:
        voter = self.voters[node_id]
        voter.stopped = True
        voter.scope.cancel()
        await voter.quorum.aclose()


async def _serve_voter(voter_args: dict[str, Any], *,
                       task_status: trio.TaskStatus[Voter] = trio.TASK_STATUS_IGNORED) -> None:
    node_id: int = voter_args["node_id"]
    quorum: RaftQuorum = voter_args["quorum"]
    controller: QuorumController = voter_args["controller"]
    router = RequestRouter()
    controller.register(router)
    server = NetworkServer([Listener("CONTROLLER", "127.0.0.1", voter_args["port"], "PLAINTEXT")],
                           router)
    with trio.CancelScope() as scope:
        try:
            async with trio.open_nursery() as nursery:
                addresses = await nursery.start(server.serve)
                await nursery.start(controller.run)
                task_status.started(Voter(node_id, quorum, controller.state, controller,
                                          addresses["CONTROLLER"], scope))
        finally:
            with trio.CancelScope(shield=True):
                await quorum.aclose()


@asynccontextmanager
async def running_quorum(root: Path, size: int, settings: ControllerSettings,
                         **controller_options: Any) -> AsyncIterator[Quorum]:
    """Start `size` voters (ids 1..size) and stop them all on exit."""
    ports = free_ports(2 * size)
    raft_ports, controller_ports = ports[:size], ports[size:]
    voters = {i + 1: ("127.0.0.1", raft_ports[i]) for i in range(size)}
    endpoints = {i + 1: ControllerEndpoint("CONTROLLER", "127.0.0.1", controller_ports[i])
                 for i in range(size)}
    quorum_handle = Quorum()
    async with trio.open_nursery() as nursery:
        for node_id in voters:
            state = MetadataStateMachine()
            raft = RaftQuorum(QuorumConfig(node_id=node_id, voters=voters,
                                           log_dir=root / f"node-{node_id}", **FAST_RAFT), state)
            controller = QuorumController(
                node_id, raft, state, settings, cluster_id=CLUSTER_ID, endpoints=endpoints,
                rng=random.Random(node_id), **controller_options)
            raft.start()
            voter = await nursery.start(_serve_voter, {
                "node_id": node_id, "quorum": raft, "controller": controller,
                "port": controller_ports[node_id - 1]})
            quorum_handle.voters[node_id] = voter
        try:
            yield quorum_handle
        finally:
            nursery.cancel_scope.cancel()


@asynccontextmanager
async def connect(voter: Voter) -> AsyncIterator[KafkaConnection]:
    conn = await KafkaConnection.connect(*voter.address, client_id="controller-test")
    try:
        yield conn
    finally:
        await conn.aclose()


def registration(broker_id: int, port: int, rack: str | None = None) -> dict[str, Any]:
    """A BrokerRegistration request body for a fake broker listening on `port`."""
    return {
        "broker_id": broker_id,
        "cluster_id": CLUSTER_ID,
        "incarnation_id": uuid.uuid4(),
        "listeners": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": port,
                       "security_protocol": 0}],
        "features": [],
        "rack": rack,
    }
