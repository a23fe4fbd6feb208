"""console-producer and console-consumer (real subprocesses) against stub brokers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import trio

from tests.unit.clients.stub_cluster import StubCluster
from tests.unit.broker.group.harness import running_group_broker

RAFTKA = str(Path(sys.executable).parent / "raftka")


async def run_tool(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    with trio.fail_after(60):
        return await trio.run_process([RAFTKA, *args], stdin=stdin, capture_stdout=True,
                                      capture_stderr=True, check=False)


async def test_lines_round_trip_through_both_tools(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 2)
    cluster.add_topic("t", leaders=[1, 2])
    lines = [f"k{i}\tvalue {i}" for i in range(300)]
    produced = await run_tool("console-producer", "--bootstrap-server", cluster.bootstrap,
                              "--topic", "t", "--property", "parse.key=true",
                              "--producer-property", "linger.ms=5",
                              stdin=("\n".join(lines) + "\n").encode())
    assert produced.returncode == 0, produced.stderr
    assert sum(s.next_offset for s in cluster.partitions.values()) == 300

    consumed = await run_tool("console-consumer", "--bootstrap-server", cluster.bootstrap,
                              "--topic", "t", "--from-beginning", "--max-messages", "300",
                              "--property", "print.key=true", "--property",
                              "print.offset=true", "--timeout-ms", "10000")
    assert consumed.returncode == 0, consumed.stderr
    rows = [line.split("\t") for line in consumed.stdout.decode().splitlines()]
    assert sorted((k, v) for _, k, v in rows) == sorted(tuple(l.split("\t")) for l in lines)
    assert b"Processed a total of 300 messages" in consumed.stderr


async def test_consumer_partition_offset_and_idle_timeout(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    produced = await run_tool("console-producer", "--bootstrap-server", cluster.bootstrap,
                              "--topic", "t", stdin=b"a\nb\nc\nd")
    assert produced.returncode == 0, produced.stderr
    consumed = await run_tool("console-consumer", "--bootstrap-server", cluster.bootstrap,
                              "--topic", "t", "--partition", "0", "--offset", "2",
                              "--timeout-ms", "500")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout == b"c\nd\n"
    assert b"Processed a total of 2 messages" in consumed.stderr


async def test_a_second_run_in_the_same_group_resumes_where_the_first_stopped(
        tmp_path: Path) -> None:
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("t", 2)
        lines = b"".join(b"line %d\n" % i for i in range(10))
        produced = await run_tool("console-producer", "--bootstrap-server", broker.bootstrap,
                                  "--topic", "t", stdin=lines)
        assert produced.returncode == 0, produced.stderr
        group = ("console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", "t",
                 "--group", "g", "--from-beginning", "--timeout-ms", "20000")
        # --max-messages ends both runs; the idle timeout is only a safety net (it starts
        # before the group join, which may be slow on a loaded machine).
        first = await run_tool(*group, "--max-messages", "6")
        assert first.returncode == 0, first.stderr
        assert b"Processed a total of 6 messages" in first.stderr
        second = await run_tool(*group, "--max-messages", "4")
        assert second.returncode == 0, second.stderr
        printed = first.stdout.splitlines() + second.stdout.splitlines()
        assert sorted(printed) == sorted(lines.splitlines())
        assert b"Processed a total of 4 messages" in second.stderr


async def test_group_keeps_a_user_supplied_auto_offset_reset(tmp_path: Path) -> None:
    async with running_group_broker(tmp_path) as broker:
        await broker.create_topic("t", 1)
        produced = await run_tool("console-producer", "--bootstrap-server", broker.bootstrap,
                                  "--topic", "t", stdin=b"a\nb\n")
        assert produced.returncode == 0, produced.stderr
        group = ("console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", "t",
                 "--group", "reset")
        # Without --from-beginning the tool would start at the end; the property wins.
        consumed = await run_tool(*group, "--consumer-property", "auto.offset.reset=earliest",
                                  "--max-messages", "2", "--timeout-ms", "20000")
        assert consumed.returncode == 0, consumed.stderr
        assert consumed.stdout == b"a\nb\n"
        clash = await run_tool(*group, "--from-beginning", "--consumer-property",
                               "auto.offset.reset=latest")
        assert clash.returncode == 1
        assert b"conflicting configs" in clash.stderr


async def test_group_with_partition_and_bad_key_lines_are_refused(
        nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    grouped = await run_tool("console-consumer", "--bootstrap-server", cluster.bootstrap,
                             "--topic", "t", "--group", "g", "--partition", "0")
    assert grouped.returncode == 1
    assert b"group and partition cannot be specified together" in grouped.stderr
    bad = await run_tool("console-producer", "--bootstrap-server", cluster.bootstrap,
                         "--topic", "t", "--property", "parse.key=true", stdin=b"nokey\n")
    assert bad.returncode == 1
    assert b"No key separator found on line number 1" in bad.stderr
