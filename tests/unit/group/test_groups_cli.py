"""`raftka groups` against an in-process broker: lag, reset and delete."""

from __future__ import annotations

import trio

from broker.cli.main import main
from clients.protocol import ApiKey
from tests.unit.group.harness import running_group_broker
from tests.unit.group.test_coordinator_clients import produce, ready


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
