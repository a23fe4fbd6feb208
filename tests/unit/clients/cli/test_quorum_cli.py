"""`raftka quorum describe` against a real trio server answering with the real codec."""

from __future__ import annotations

import json

import pytest
import trio

from broker.cli.main import main
from clients.protocol import ApiKey, ErrorCode, Request
from tests.unit.clients.stub_broker import StubBroker, all_versions
from tests.unit.clients.net.test_blocking_connection import in_thread
from tests.unit.clients.net.test_trio_connection import free_port_without_listener


def replica(node_id: int, leo: int, fetched: int, caught_up: int) -> dict:
    return {"replica_id": node_id, "log_end_offset": leo, "last_fetch_timestamp": fetched,
            "last_caught_up_timestamp": caught_up}


QUORUM = {
    "topic_name": "__cluster_metadata",
    "partitions": [{
        "partition_index": 0, "leader_id": 1, "leader_epoch": 5, "high_watermark": 100,
        "current_voters": [replica(2, 90, 990, 900), replica(1, 100, 1000, 1000),
                           replica(3, 100, 995, 995)],
        "observers": [replica(4, 80, 970, 800), replica(5, 100, 999, 999)],
    }],
}


def describe_quorum(request: Request) -> dict:
    return {"topics": [QUORUM]}


def describe_cluster(request: Request) -> dict:
    return {"cluster_id": "MkU3OEVBNTcwNTJENDM2Qk", "controller_id": 1, "brokers": []}


async def start_stub(nursery: trio.Nursery, **handlers: object) -> StubBroker:
    chosen = {ApiKey.DESCRIBE_QUORUM: describe_quorum, ApiKey.DESCRIBE_CLUSTER: describe_cluster}
    chosen.update({ApiKey[name]: h for name, h in handlers.items()})
    return await StubBroker(chosen).start(nursery)


async def run_cli(*argv: str) -> int:
    return await in_thread(lambda: main(["quorum", "describe", *argv]))


async def test_status_prints_kafka_lines(nursery: trio.Nursery,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    stub = await start_stub(nursery)
    assert await run_cli("--bootstrap-server", f"127.0.0.1:{stub.port}", "--status") == 0
    assert capsys.readouterr().out.splitlines() == [
        "ClusterId:              MkU3OEVBNTcwNTJENDM2Qk",
        "LeaderId:               1",
        "LeaderEpoch:            5",
        "HighWatermark:          100",
        "MaxFollowerLag:         10",
        "MaxFollowerLagTimeMs:   100",
        "CurrentVoters:          [2,1,3]",
        "CurrentObservers:       [4,5]",
    ]
    (request,) = stub.requests(ApiKey.DESCRIBE_QUORUM)
    (topic,) = request.body.topics
    assert topic.topic_name == "__cluster_metadata"
    assert [p.partition_index for p in topic.partitions] == [0]
    assert request.api_version == 2


async def test_status_json(nursery: trio.Nursery, capsys: pytest.CaptureFixture[str]) -> None:
    stub = await start_stub(nursery)
    assert await run_cli("--bootstrap-server", f"127.0.0.1:{stub.port}", "--status",
                         "--json") == 0
    assert json.loads(capsys.readouterr().out) == {
        "cluster_id": "MkU3OEVBNTcwNTJENDM2Qk", "leader_id": 1, "leader_epoch": 5,
        "high_watermark": 100, "max_follower_lag": 10, "max_follower_lag_time_ms": 100,
        "current_voters": [2, 1, 3], "current_observers": [4, 5],
    }


async def test_replication_prints_a_row_per_replica(
        nursery: trio.Nursery, capsys: pytest.CaptureFixture[str]) -> None:
    stub = await start_stub(nursery)
    assert await run_cli("--bootstrap-server", f"127.0.0.1:{stub.port}", "--replication") == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header == ("NodeId  LogEndOffset  Lag  LastFetchTimestamp  LastCaughtUpTimestamp  "
                      "Status")
    assert [row.split() for row in rows] == [
        ["1", "100", "0", "1000", "1000", "Leader"],
        ["2", "90", "10", "990", "900", "Follower"],
        ["3", "100", "0", "995", "995", "Follower"],
        ["4", "80", "20", "970", "800", "Observer"],
        ["5", "100", "0", "999", "999", "Observer"],
    ]
    # Columns line up under their headers.
    assert all(row.index(row.split()[-1]) == header.index("Status") for row in rows)
    assert stub.requests(ApiKey.DESCRIBE_CLUSTER) == []


async def test_replication_json(nursery: trio.Nursery,
                                capsys: pytest.CaptureFixture[str]) -> None:
    stub = await start_stub(nursery)
    assert await run_cli("--bootstrap-server", f"127.0.0.1:{stub.port}", "--replication",
                         "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["leader_id"], out["leader_epoch"], out["high_watermark"]) == (1, 5, 100)
    assert out["replicas"][0] == {"node_id": 1, "log_end_offset": 100, "lag": 0,
                                  "last_fetch_timestamp": 1000,
                                  "last_caught_up_timestamp": 1000, "status": "Leader"}
    assert [(r["node_id"], r["lag"], r["status"]) for r in out["replicas"]] == [
        (1, 0, "Leader"), (2, 10, "Follower"), (3, 0, "Follower"),
        (4, 20, "Observer"), (5, 0, "Observer")]


async def test_status_without_describe_cluster_prints_what_is_known(
        nursery: trio.Nursery, capsys: pytest.CaptureFixture[str]) -> None:
    versions = all_versions()
    del versions[ApiKey.DESCRIBE_CLUSTER]
    stub = await StubBroker({ApiKey.DESCRIBE_QUORUM: describe_quorum}, versions).start(nursery)
    assert await run_cli("--bootstrap-server", f"127.0.0.1:{stub.port}", "--status") == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0] == "ClusterId:              unknown"
    assert lines[1] == "LeaderId:               1"
    assert "DescribeCluster" in captured.err


async def test_describe_quorum_v0_has_no_timestamps(
        nursery: trio.Nursery, capsys: pytest.CaptureFixture[str]) -> None:
    versions = all_versions()
    versions[ApiKey.DESCRIBE_QUORUM] = (0, 0)
    stub = await StubBroker({ApiKey.DESCRIBE_QUORUM: describe_quorum}, versions).start(nursery)
    assert await run_cli("--bootstrap-server", f"127.0.0.1:{stub.port}", "--status",
                         "--json") == 0
    status = json.loads(capsys.readouterr().out)
    assert status["max_follower_lag"] == 10
    assert status["max_follower_lag_time_ms"] == -1
    assert stub.requests(ApiKey.DESCRIBE_QUORUM)[0].api_version == 0


async def test_error_code_exits_1_naming_the_error(
        nursery: trio.Nursery, capsys: pytest.CaptureFixture[str]) -> None:
    def refuse(request: Request) -> dict:
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "topics": []}

    stub = await start_stub(nursery, DESCRIBE_QUORUM=refuse)
    assert await run_cli("--bootstrap-server", f"127.0.0.1:{stub.port}", "--status") == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "CLUSTER_AUTHORIZATION_FAILED (31)" in captured.err
    assert f"127.0.0.1:{stub.port}" in captured.err


async def test_partition_error_exits_1(nursery: trio.Nursery,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    def not_leader(request: Request) -> dict:
        return {"topics": [{"topic_name": "__cluster_metadata", "partitions": [
            {"partition_index": 0, "error_code": ErrorCode.NOT_LEADER_OR_FOLLOWER,
             "leader_id": -1}]}]}

    stub = await start_stub(nursery, DESCRIBE_QUORUM=not_leader)
    assert await run_cli("--bootstrap-server", f"127.0.0.1:{stub.port}",
                         "--replication", "--timeout-ms", "300") == 1
    assert "NOT_LEADER_OR_FOLLOWER (6)" in capsys.readouterr().err


async def test_unreachable_server_exits_1_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port_without_listener()
    assert await run_cli("--bootstrap-server", f"127.0.0.1:{port}", "--status",
                         "--timeout-ms", "300") == 1
    err = capsys.readouterr().err
    assert f"127.0.0.1:{port}" in err and "Traceback" not in err


async def test_first_reachable_bootstrap_server_is_used(
        nursery: trio.Nursery, capsys: pytest.CaptureFixture[str]) -> None:
    stub = await start_stub(nursery)
    dead = free_port_without_listener()
    servers = f"127.0.0.1:{dead},127.0.0.1:{stub.port}"
    assert await run_cli("--bootstrap-server", servers, "--status", "--json") == 0
    assert json.loads(capsys.readouterr().out)["leader_id"] == 1


def test_mode_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["quorum", "describe", "--bootstrap-server", "h:1"])
    assert info.value.code == 2
    assert "--status" in capsys.readouterr().err
