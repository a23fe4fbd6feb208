"""kill -9 durability: every committed command survives SIGKILL of all voters."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import trio

from tests.conftest import REPO_ROOT
from tests.unit.kraft.support import free_ports, voter_map


class NodeProcess:
    """One quorum member running tests.unit.kraft.quorum_node."""

    def __init__(self, node_id: int, voters: str, log_dir: Path, stderr_path: Path) -> None:
        self.args = [sys.executable, "-m", "tests.unit.kraft.quorum_node", "--node-id", str(node_id),
                     "--voters", voters, "--log-dir", str(log_dir), "--snapshot-entries", "8"]
        self.stderr_path = stderr_path
        self.process: trio.Process | None = None
        self.buffer = b""

    async def start(self) -> None:
        with open(self.stderr_path, "ab") as stderr:
            self.process = await trio.lowlevel.open_process(
                self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=REPO_ROOT)
        assert await self.read_line(20) == "ready"

    async def read_line(self, timeout: float) -> str:
        assert self.process is not None and self.process.stdout is not None
        with trio.fail_after(timeout):
            while b"\n" not in self.buffer:
                chunk = await self.process.stdout.receive_some()
                if not chunk:
                    raise AssertionError(f"node exited; see {self.stderr_path}")
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()

    async def request(self, line: str, timeout: float = 10) -> str:
        assert self.process is not None and self.process.stdin is not None
        await self.process.stdin.send_all(line.encode() + b"\n")
        return await self.read_line(timeout)

    async def kill(self) -> None:
        assert self.process is not None
        self.process.kill()  # SIGKILL
        await self.process.wait()
        self.buffer = b""


async def find_leader(nodes: list[NodeProcess]) -> NodeProcess:
    async def ready() -> NodeProcess | None:
        for node in nodes:
            status = json.loads((await node.request("status")).split(" ", 1)[1])
            if status["is_ready"]:
                return node
        return None

    with trio.fail_after(15):
        while (leader := await ready()) is None:
            await trio.sleep(0.05)
    return leader


async def test_committed_commands_survive_sigkill_of_every_voter(tmp_path: Path) -> None:
    voters = voter_map(free_ports(3))
    spec = ",".join(f"{i}@{host}:{port}" for i, (host, port) in voters.items())
    nodes = [NodeProcess(i, spec, tmp_path / f"node-{i}", tmp_path / f"node-{i}.stderr") for i in voters]
    try:
        async with trio.open_nursery() as nursery:
            for node in nodes:
                nursery.start_soon(node.start)
        leader = await find_leader(nodes)
        expected = []
        for i in range(30):
            record = b"rec-%d" % i
            reply = await leader.request(f"append {record.hex()}")
            assert reply.startswith("ok "), reply
            expected.append(record.hex())
        for node in nodes:
            await node.kill()

        async with trio.open_nursery() as nursery:
            for node in nodes:
                nursery.start_soon(node.start)
        await find_leader(nodes)

        async def all_recovered() -> bool:
            for node in nodes:
                records = json.loads((await node.request("records")).split(" ", 1)[1])
                if records != expected:
                    return False
            return True

        with trio.fail_after(15):
            while not await all_recovered():
                await trio.sleep(0.05)
        snapshots = [tmp_path / f"node-{i}" / "__cluster_metadata-0" / "raft.snapshot" for i in voters]
        assert all(path.exists() for path in snapshots), "recovery should have used snapshots"
    finally:
        for node in nodes:
            if node.process is not None and node.process.returncode is None:
                node.process.kill()
                await node.process.wait()
