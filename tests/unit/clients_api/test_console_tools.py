"""console-producer and console-consumer (real subprocesses) against stub brokers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import trio

from tests.unit.clients_api.stub_cluster import StubCluster

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


async def test_group_and_bad_key_lines_are_refused(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    grouped = await run_tool("console-consumer", "--bootstrap-server", cluster.bootstrap,
                             "--topic", "t", "--group", "g")
    assert grouped.returncode == 1
    assert b"--group is not supported yet" in grouped.stderr
    bad = await run_tool("console-producer", "--bootstrap-server", cluster.bootstrap,
                         "--topic", "t", "--property", "parse.key=true", stdin=b"nokey\n")
    assert bad.returncode == 1
    assert b"No key separator found on line number 1" in bad.stderr
