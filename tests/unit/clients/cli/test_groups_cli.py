"""`raftka groups` against an in-process broker: lag, reset and delete."""

from __future__ import annotations

from typing import Any

import trio

from broker.cli.main import main
from clients.net import KafkaConnection
from clients.protocol import ApiKey
from tests.unit.broker.group.harness import GroupBroker, running_group_broker
from tests.unit.broker.group.test_coordinator_clients import produce, ready


def cli(capsys, *args: str) -> str:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    assert main(["groups", *args]) == 0
    return capsys.readouterr().out


def _exercise(bootstrap: str, capsys) -> None:  # type: ignore[no-untyped-def]
    produce(bootstrap, "lag", 10, 2)  # five records per partition
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cli-group",
                         "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition("lag", 0, 2), TopicPartition("lag", 1, 5)],
                    asynchronous=False)
    consumer.close()
    assert "cli-group" in cli(capsys, "--bootstrap-server", bootstrap, "--list").split()
    described = cli(capsys, "--bootstrap-server", bootstrap, "--describe", "--group",
                    "cli-group")
    rows = [line.split() for line in described.splitlines() if line.startswith("cli-group")]
    assert [r[1:6] for r in rows] == [["lag", "0", "2", "5", "3"], ["lag", "1", "5", "5", "0"]]
    assert "GROUP" in described and "LOG-END-OFFSET" in described
    state = cli(capsys, "--bootstrap-server", bootstrap, "--describe", "--group", "cli-group",
                "--state")
    assert "Empty" in state
    dry = cli(capsys, "--bootstrap-server", bootstrap, "--reset-offsets", "--group", "cli-group",
              "--topic", "lag", "--to-earliest", "--dry-run")
    assert [line.split()[1:] for line in dry.splitlines()[1:]] == [["lag", "0", "0"],
                                                                     ["lag", "1", "0"]]
    cli(capsys, "--bootstrap-server", bootstrap, "--reset-offsets", "--group", "cli-group",
        "--topic", "lag:1", "--shift-by", "-2", "--execute")
    cli(capsys, "--bootstrap-server", bootstrap, "--reset-offsets", "--group", "cli-group",
        "--topic", "lag:0", "--to-offset", "99", "--execute")
    described = cli(capsys, "--bootstrap-server", bootstrap, "--describe", "--group",
                    "cli-group")
    rows = [line.split() for line in described.splitlines() if line.startswith("cli-group")]
    assert [r[2:6] for r in rows] == [["0", "5", "5", "0"], ["1", "3", "5", "2"]]
    # Consumption resumes from the reset offsets.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cli-group",
                         "enable.auto.commit": False})
    consumer.subscribe(["lag"])
    got = []
    import time
    deadline = time.monotonic() + 20
    while len(got) < 2 and time.monotonic() < deadline:
        message = consumer.poll(0.1)
        if message is not None and not message.error():
            got.append((message.partition(), message.offset()))
    consumer.close()
    assert sorted(got) == [(1, 3), (1, 4)]
    out = cli(capsys, "--bootstrap-server", bootstrap, "--delete", "--group", "cli-group")
    assert "was successful" in out
    assert main(["groups", "--bootstrap-server", bootstrap, "--delete", "--group",
                 "cli-group"]) == 1
    assert "GROUP_ID_NOT_FOUND" in capsys.readouterr().err


async def test_describe_reset_and_delete(tmp_path, capsys):
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("lag", 2)
        await ready(broker, "cli-group")
        await trio.to_thread.run_sync(_exercise, broker.bootstrap, capsys)


async def test_reset_refuses_an_active_group(tmp_path, capsys):
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("lag", 1)
        await ready(broker, "active")
        conn = await broker.connect()
        join = {"group_id": "active", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
                "member_id": "", "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b""}]}
        joined = await conn.request(ApiKey.JOIN_GROUP, join, 3)
        assert joined["error_code"] == 0

        def reset() -> int:
            return main(["groups", "--bootstrap-server", broker.bootstrap, "--reset-offsets",
                         "--group", "active", "--topic", "lag", "--to-latest", "--execute"])

        assert await trio.to_thread.run_sync(reset) == 1
        assert ("inactive, but the current state is CompletingRebalance"
                in capsys.readouterr().err)
        await conn.aclose()


async def committed(conn: KafkaConnection, group: str) -> dict[int, int]:
    response = await conn.request(ApiKey.OFFSET_FETCH, {"group_id": group, "topics": None}, 7)
    return {p["partition_index"]: p["committed_offset"]
            for t in response["topics"] for p in t["partitions"]}


async def two_partitions_with_records(broker: GroupBroker, group: str) -> KafkaConnection:
    """Topic "ends": partition 0 holds offsets 2-4 (0-1 deleted), partition 1 offsets 0-4;
    `group` has committed 3 and 1."""
    await broker.create_topic("ends", 2)
    await ready(broker, group)
    await trio.to_thread.run_sync(produce, broker.bootstrap, "ends", 10, 2)
    conn = await broker.connect()
    deleted = await conn.request(ApiKey.DELETE_RECORDS, {"timeout_ms": 5000, "topics": [
        {"name": "ends", "partitions": [{"partition_index": 0, "offset": 2}]}]})
    assert deleted["topics"][0]["partitions"][0]["low_watermark"] == 2
    response = await conn.request(ApiKey.OFFSET_COMMIT, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
        "topics": [{"name": "ends", "partitions": [
            {"partition_index": p, "committed_offset": o, "committed_metadata": ""}
            for p, o in ((0, 3), (1, 1))]}]}, 8)
    assert [p["error_code"] for p in response["topics"][0]["partitions"]] == [0, 0]
    return conn


def reset(broker: GroupBroker, group: str, *args: str) -> Any:
    return main(["groups", "--bootstrap-server", broker.bootstrap, "--reset-offsets",
                 "--group", group, *args])


async def test_reset_to_latest_and_to_earliest_commit_the_log_end_and_start(tmp_path, capsys):
    async with running_group_broker(tmp_path) as broker:
        conn = await two_partitions_with_records(broker, "ends-group")
        for target, expected in (("--to-latest", {0: 5, 1: 5}), ("--to-earliest", {0: 2, 1: 0})):
            capsys.readouterr()
            code = await trio.to_thread.run_sync(reset, broker, "ends-group", "--topic", "ends",
                                                 target, "--execute")
            out = capsys.readouterr().out
            assert code == 0, target
            assert [line.split() for line in out.splitlines()[1:]] == [
                ["ends-group", "ends", str(p), str(o)] for p, o in expected.items()]
            assert await committed(conn, "ends-group") == expected, target
        await conn.aclose()


async def test_reset_commits_nothing_when_an_offset_cannot_be_looked_up(tmp_path, capsys):
    async with running_group_broker(tmp_path) as broker:
        conn = await two_partitions_with_records(broker, "stuck")

        async def refused(*args: str) -> str:
            capsys.readouterr()
            assert await trio.to_thread.run_sync(reset, broker, "stuck", *args) == 1
            captured = capsys.readouterr()
            assert captured.out == ""
            [line] = captured.err.splitlines()
            return line

        # A partition that does not exist, named among others that do.
        line = await refused("--topic", "ends:0,7", "--to-latest", "--execute")
        assert line == ("raftka groups: cannot reset the offsets of group 'stuck', nothing "
                        "was committed: no offset for ends-7 (no such partition)")
        # A partition without a leader.
        await broker.move_leader("ends", 1, -1)
        for target in ("--to-latest", "--to-earliest", "--to-offset=4"):
            for mode in ("--dry-run", "--execute"):
                line = await refused("--topic", "ends", target, mode)
                assert line.endswith("nothing was committed: no offset for ends-1 (no leader)")
        assert await committed(conn, "stuck") == {0: 3, 1: 1}
        await conn.aclose()
