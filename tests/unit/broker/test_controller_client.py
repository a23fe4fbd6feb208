"""ControllerClient against real trio servers on 127.0.0.1 that speak the real codec."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field

import pytest
import trio

from broker.controller_client import (
    ControllerClient,
    ControllerUnavailableError,
    is_not_controller,
    leader_from_describe_quorum,
)
from clients.protocol import ApiKey, ErrorCode, Request
from tests.unit.clients.stub_broker import CLOSE, StubBroker, all_versions

HEARTBEAT = {"broker_id": 7, "broker_epoch": 3, "current_metadata_offset": 0,
             "want_fence": False, "want_shut_down": False}


@dataclass
class Cluster:
    """Voters that agree on who leads; ``leader`` may change between requests."""

    leader: int | None
    describe_quorum: bool = True
    stubs: dict[int, StubBroker] = field(default_factory=dict)

    def voters(self) -> dict[int, tuple[str, int]]:
        return {node_id: ("127.0.0.1", stub.port) for node_id, stub in self.stubs.items()}

    def heartbeats(self, node_id: int) -> int:
        return len(self.stubs[node_id].requests(ApiKey.BROKER_HEARTBEAT))

    async def start(self, nursery: trio.Nursery, *node_ids: int) -> Cluster:
        for node_id in node_ids:
            versions = all_versions()
            if not self.describe_quorum:
                del versions[ApiKey.DESCRIBE_QUORUM]
            handlers = {
                ApiKey.BROKER_HEARTBEAT: self._heartbeat(node_id),
                ApiKey.CREATE_TOPICS: self._create_topics(node_id),
                ApiKey.DESCRIBE_QUORUM: self._describe_quorum,
            }
            self.stubs[node_id] = await StubBroker(handlers, versions).start(nursery)
        return self

    def _heartbeat(self, node_id: int):  # noqa: ANN202
        def answer(request: Request) -> dict:
            if self.leader != node_id:
                return {"error_code": ErrorCode.NOT_CONTROLLER}
            return {"error_code": 0, "is_caught_up": True, "is_fenced": False}
        return answer

    def _create_topics(self, node_id: int):  # noqa: ANN202
        def answer(request: Request) -> dict:
            code = ErrorCode.NONE if self.leader == node_id else ErrorCode.NOT_CONTROLLER
            return {"topics": [{"name": t.name, "error_code": code}
                               for t in request.body.topics]}
        return answer

    def _describe_quorum(self, request: Request) -> dict:
        return {"topics": [{"topic_name": "__cluster_metadata", "partitions": [
            {"partition_index": 0, "leader_id": -1 if self.leader is None else self.leader,
             "leader_epoch": 1, "high_watermark": 0}]}]}


def refused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fast_channel(voters: dict[int, tuple[str, int]]) -> ControllerClient:
    return ControllerClient(voters, "broker-7", retry_backoff_ms=10, retry_backoff_max_ms=50)


async def test_tries_each_voter_until_one_is_not_not_controller(nursery: trio.Nursery) -> None:
    cluster = await Cluster(leader=2, describe_quorum=False).start(nursery, 1, 2, 3)
    async with fast_channel(cluster.voters()) as channel:
        assert channel.active_controller_id is None
        response = await channel.send(ApiKey.BROKER_HEARTBEAT, HEARTBEAT, timeout_ms=5000)
        assert response["error_code"] == 0 and response["is_fenced"] is False
        assert channel.active_controller_id == 2
        await channel.send(ApiKey.BROKER_HEARTBEAT, HEARTBEAT, timeout_ms=5000)
    # Voter 1 was asked once during discovery; afterwards requests go straight to node 2.
    assert [cluster.heartbeats(n) for n in (1, 2, 3)] == [1, 2, 0]


async def test_uses_the_leader_named_by_describe_quorum(nursery: trio.Nursery) -> None:
    cluster = await Cluster(leader=3).start(nursery, 1, 2, 3)
    async with fast_channel(cluster.voters()) as channel:
        await channel.send(ApiKey.BROKER_HEARTBEAT, HEARTBEAT, timeout_ms=5000)
        assert channel.active_controller_id == 3
    assert [cluster.heartbeats(n) for n in (1, 2, 3)] == [0, 0, 1]
    assert len(cluster.stubs[1].requests(ApiKey.DESCRIBE_QUORUM)) == 1
    assert cluster.stubs[2].received == []


async def test_every_topic_not_controller_counts_as_not_controller(
        nursery: trio.Nursery) -> None:
    cluster = await Cluster(leader=2, describe_quorum=False).start(nursery, 1, 2)
    body = {"topics": [{"name": "a", "num_partitions": 1, "replication_factor": 1,
                        "assignments": [], "configs": []},
                       {"name": "b", "num_partitions": 1, "replication_factor": 1,
                        "assignments": [], "configs": []}],
            "timeout_ms": 1000, "validate_only": False}
    async with fast_channel(cluster.voters()) as channel:
        response = await channel.send(ApiKey.CREATE_TOPICS, body, timeout_ms=5000)
        assert channel.active_controller_id == 2
    assert [t["error_code"] for t in response["topics"]] == [0, 0]
    assert len(cluster.stubs[1].requests(ApiKey.CREATE_TOPICS)) == 1


async def test_fails_over_when_the_controller_dies(nursery: trio.Nursery) -> None:
    cluster = await Cluster(leader=1).start(nursery, 1, 2)
    async with fast_channel(cluster.voters()) as channel:
        await channel.send(ApiKey.BROKER_HEARTBEAT, HEARTBEAT, timeout_ms=5000)
        assert channel.active_controller_id == 1
        cluster.stubs[1].stop()
        cluster.leader = 2
        response = await channel.send(ApiKey.BROKER_HEARTBEAT, HEARTBEAT, timeout_ms=5000)
        assert response["error_code"] == 0
        assert channel.active_controller_id == 2


async def test_retries_when_the_controller_dies_mid_request(nursery: trio.Nursery) -> None:
    cluster = await Cluster(leader=1).start(nursery, 1, 2)

    def die_and_hand_over(request: Request) -> object:
        cluster.leader = 2
        cluster.stubs[1].stop()
        return CLOSE

    async with fast_channel(cluster.voters()) as channel:
        await channel.send(ApiKey.BROKER_HEARTBEAT, HEARTBEAT, timeout_ms=5000)
        cluster.stubs[1].handlers[ApiKey.BROKER_HEARTBEAT] = die_and_hand_over
        response = await channel.send(ApiKey.BROKER_HEARTBEAT, HEARTBEAT, timeout_ms=5000)
        assert response["error_code"] == 0
        assert channel.active_controller_id == 2
    assert cluster.heartbeats(1) == 2


async def test_keeps_retrying_until_a_leader_appears(nursery: trio.Nursery) -> None:
    cluster = await Cluster(leader=None).start(nursery, 1, 2)
    original = cluster.stubs[2].handlers[ApiKey.BROKER_HEARTBEAT]

    def elect_after_three(request: Request) -> dict:
        if cluster.heartbeats(2) >= 3:
            cluster.leader = 2
        return original(request)

    cluster.stubs[2].handlers[ApiKey.BROKER_HEARTBEAT] = elect_after_three
    async with fast_channel(cluster.voters()) as channel:
        response = await channel.send(ApiKey.BROKER_HEARTBEAT, HEARTBEAT, timeout_ms=5000)
        assert response["error_code"] == 0
        assert channel.active_controller_id == 2
    assert cluster.heartbeats(2) == 3


async def test_times_out_with_controller_unavailable(nursery: trio.Nursery) -> None:
    cluster = await Cluster(leader=None).start(nursery, 1, 2)
    async with fast_channel(cluster.voters()) as channel:
        start = trio.current_time()
        with pytest.raises(ControllerUnavailableError, match="NOT_CONTROLLER"):
            await channel.send(ApiKey.BROKER_HEARTBEAT, HEARTBEAT, timeout_ms=300)
        elapsed = trio.current_time() - start
        assert channel.active_controller_id is None
    assert 0.3 <= elapsed < 3
    # Several rounds over both voters, separated by backoff.
    assert cluster.heartbeats(1) >= 2 and cluster.heartbeats(2) >= 2


async def test_unreachable_voters_give_controller_unavailable() -> None:
    voters = {1: ("127.0.0.1", refused_port()), 2: ("127.0.0.1", refused_port())}
    async with fast_channel(voters) as channel:
        with pytest.raises(ControllerUnavailableError, match="node 1: cannot connect"):
            await channel.send(ApiKey.BROKER_HEARTBEAT, HEARTBEAT, timeout_ms=200)


async def test_a_hanging_controller_is_abandoned_at_the_request_timeout(
        nursery: trio.Nursery) -> None:
    cluster = await Cluster(leader=1).start(nursery, 1, 2)
    release = trio.Event()

    async def hang(request: Request) -> None:
        await release.wait()

    cluster.stubs[1].handlers[ApiKey.BROKER_HEARTBEAT] = hang
    channel = ControllerClient(cluster.voters(), "broker-7", request_timeout_ms=200,
                                retry_backoff_ms=10, retry_backoff_max_ms=50)
    async with channel:
        with pytest.raises(ControllerUnavailableError, match="node 1"):
            await channel.send(ApiKey.BROKER_HEARTBEAT, HEARTBEAT, timeout_ms=500)
        cluster.leader = 2
        response = await channel.send(ApiKey.BROKER_HEARTBEAT, HEARTBEAT, timeout_ms=2000)
        assert response["error_code"] == 0
        assert channel.active_controller_id == 2
    release.set()


def test_is_not_controller_reads_top_level_and_per_topic_errors() -> None:
    nc = ErrorCode.NOT_CONTROLLER
    assert is_not_controller(ApiKey.BROKER_HEARTBEAT, {"error_code": nc})
    assert not is_not_controller(ApiKey.BROKER_HEARTBEAT, {"error_code": 0})
    assert is_not_controller(ApiKey.CREATE_TOPICS,
                             {"topics": [{"error_code": nc}, {"error_code": nc}]})
    assert not is_not_controller(ApiKey.CREATE_TOPICS,
                                 {"topics": [{"error_code": nc}, {"error_code": 36}]})
    assert not is_not_controller(ApiKey.CREATE_TOPICS, {"topics": []})
    assert is_not_controller(ApiKey.DELETE_TOPICS, {"responses": [{"error_code": nc}]})
    assert is_not_controller(ApiKey.CREATE_PARTITIONS, {"results": [{"error_code": nc}]})


def test_leader_from_describe_quorum() -> None:
    def answer(leader: int, error: int = 0) -> dict:
        return {"error_code": 0, "topics": [{"topic_name": "__cluster_metadata", "partitions": [
            {"partition_index": 0, "error_code": error, "leader_id": leader}]}]}

    assert leader_from_describe_quorum(answer(3)) == 3
    assert leader_from_describe_quorum(answer(-1)) is None
    assert leader_from_describe_quorum(answer(3, error=6)) is None
    assert leader_from_describe_quorum({"error_code": 41, "topics": []}) is None


async def test_the_quorum_leader_is_tried_before_a_silent_voter(nursery: trio.Nursery) -> None:
    cluster = await Cluster(leader=2).start(nursery, 1, 2)
    release = trio.Event()

    async def swallow(request: Request) -> None:
        await release.wait()

    # Voter 1 (first in id order) takes requests and never answers, as a node cut off by a
    # firewall would; the local Raft member already knows node 2 leads.
    cluster.stubs[1].handlers[ApiKey.BROKER_HEARTBEAT] = swallow
    cluster.stubs[1].handlers[ApiKey.DESCRIBE_QUORUM] = swallow
    channel = ControllerClient(cluster.voters(), "broker-7", request_timeout_ms=2000,
                               retry_backoff_ms=10, quorum_leader=lambda: 2)
    async with channel:
        with trio.fail_after(1):
            response = await channel.send(ApiKey.BROKER_HEARTBEAT, HEARTBEAT, timeout_ms=2000)
        assert response["error_code"] == 0 and channel.active_controller_id == 2
    assert cluster.heartbeats(1) == 0
    release.set()


async def test_a_voter_that_did_not_answer_is_asked_last_next_time(
        nursery: trio.Nursery) -> None:
    cluster = await Cluster(leader=1).start(nursery, 1, 2)
    release = trio.Event()

    async def swallow(request: Request) -> None:
        await release.wait()

    # Controller 1 is cut off mid-session: its heartbeat times out; node 2 takes over. The
    # next heartbeat must not spend its whole timeout on node 1 (first in id order) again.
    cluster.stubs[1].handlers[ApiKey.BROKER_HEARTBEAT] = swallow
    cluster.stubs[1].handlers[ApiKey.DESCRIBE_QUORUM] = swallow
    channel = ControllerClient(cluster.voters(), "broker-7", request_timeout_ms=300,
                               retry_backoff_ms=10, retry_backoff_max_ms=50)
    async with channel:
        with pytest.raises(ControllerUnavailableError, match="node 1"):
            await channel.send(ApiKey.BROKER_HEARTBEAT, HEARTBEAT, timeout_ms=300)
        cluster.leader = 2
        asked_before = cluster.heartbeats(1) + len(
            cluster.stubs[1].requests(ApiKey.DESCRIBE_QUORUM))
        response = await channel.send(ApiKey.BROKER_HEARTBEAT, HEARTBEAT, timeout_ms=2000)
        assert response["error_code"] == 0 and channel.active_controller_id == 2
        assert cluster.heartbeats(1) + len(
            cluster.stubs[1].requests(ApiKey.DESCRIBE_QUORUM)) == asked_before
    release.set()
