"""Restart from snapshot plus journal, and what the quorum leaves on disk."""

from __future__ import annotations

import struct
from pathlib import Path

import msgpack
import pytest

from kraft.command import decode_command, is_command
from kraft.errors import QuorumError
from kraft.quorum import JOURNAL_FILE_NAME, METADATA_DIR_NAME, SNAPSHOT_FILE_NAME
from kraft.snapshot import read_snapshot_file
from tests.unit.kraft.support import wait_until

# pysyncobj's journal: 24-byte name, 8-byte version, u32 format, u32 end offset, then records
# of u32 size | u64 index | u64 term | command | u32 size.
_JOURNAL_HEADER = 40


def journal_commands(path: Path) -> list[tuple[int, int, bytes]]:
    data = path.read_bytes()
    (end,) = struct.unpack_from("<I", data, 36)
    entries, pos = [], _JOURNAL_HEADER
    while pos < end:
        (size,) = struct.unpack_from("<I", data, pos)
        index, term = struct.unpack_from("<QQ", data, pos + 4)
        entries.append((index, term, data[pos + 20:pos + 4 + size]))
        pos += size + 8
    return entries


async def test_restart_from_snapshot_and_journal_restores_every_voter(cluster_factory) -> None:
    cluster = cluster_factory(3, snapshot_interval_entries=5)
    cluster.start_all()
    leader = await cluster.leader()
    for i in range(23):
        await leader.append([b"r%d" % i, b"x"])
    expected = [r for i in range(23) for r in (b"r%d" % i, b"x")]
    await wait_until(lambda: all(m.records() == expected for m in cluster.machines.values()), 5,
                     "all voters to apply")
    before = {node_id: list(m.entries) for node_id, m in cluster.machines.items()}
    roots = {node_id: q.metadata_dir for node_id, q in cluster.nodes.items()}
    cluster.close()
    for root in roots.values():
        assert (root / SNAPSHOT_FILE_NAME).exists()

    cluster.start_all()
    await wait_until(lambda: all(m.entries == before[i] for i, m in cluster.machines.items()), 10,
                     "every voter to reach its state from before the restart")
    for machine in cluster.machines.values():
        assert machine.restores, "the state should come from a snapshot, then the journal"
    leader = await cluster.leader()
    offset = await leader.append([b"after-restart"])
    assert offset > max(o for o, _, _ in before[leader.config.node_id])


async def test_disk_holds_msgpack_snapshot_and_unpickled_commands(cluster_factory) -> None:
    cluster = cluster_factory(1, snapshot_interval_entries=4)
    cluster.start_all()
    quorum = next(iter(cluster.nodes.values()))
    await cluster.leader()
    for i in range(10):
        await quorum.append([b"v%d" % i])
    await wait_until(lambda: (quorum.metadata_dir / SNAPSHOT_FILE_NAME).exists(), 5, "a snapshot")
    machine = next(iter(cluster.machines.values()))
    cluster.close()

    snapshot = read_snapshot_file(quorum.metadata_dir / SNAPSHOT_FILE_NAME)
    assert snapshot.offset >= 2
    assert snapshot.state[:1] != b"\x80"  # not a pickle stream
    entries = journal_commands(quorum.metadata_dir / JOURNAL_FILE_NAME)
    assert entries, "the journal keeps the tail after the snapshot"
    for index, term, command in entries:
        assert command == b"\x01" or is_command(command), (index, command)
        if is_command(command):
            assert decode_command(command).epoch == term
    assert [b"v%d" % i for i in range(10)] == machine.records()
    meta = msgpack.unpackb((quorum.metadata_dir / (JOURNAL_FILE_NAME + ".meta")).read_bytes())
    assert meta["currentTerm"] == quorum.status().epoch >= 1
    for path in quorum.metadata_dir.iterdir():
        assert path.read_bytes()[:1] != b"\x80", f"{path.name} is a pickle"


async def test_damaged_term_and_vote_file_refuses_start(cluster_factory) -> None:
    # Starting from an empty vote would let this voter vote twice in one term.
    cluster = cluster_factory(1)
    (node_id,) = cluster.voters
    quorum = cluster.start(node_id)
    await cluster.leader()
    await quorum.append([b"x"])
    cluster.stop(node_id)
    (quorum.metadata_dir / (JOURNAL_FILE_NAME + ".meta")).write_bytes(b"\x80\x04garbage")
    with pytest.raises(QuorumError, match="journal meta"):
        cluster.start(node_id)


async def test_snapshot_interval_bytes_forces_a_snapshot(cluster_factory) -> None:
    cluster = cluster_factory(1, snapshot_interval_entries=100_000, snapshot_interval_bytes=1000)
    cluster.start_all()
    quorum = await cluster.leader()
    await quorum.append([b"y" * 600])
    assert not (quorum.metadata_dir / SNAPSHOT_FILE_NAME).exists()
    await quorum.append([b"z" * 600])
    await wait_until(lambda: (quorum.metadata_dir / SNAPSHOT_FILE_NAME).exists(), 5, "a byte-triggered snapshot")


def test_metadata_dir_name_matches_kafka() -> None:
    assert METADATA_DIR_NAME == "__cluster_metadata-0"


async def test_lagging_members_catch_up_through_the_leaders_snapshot(cluster_factory) -> None:
    cluster = cluster_factory(3, snapshot_interval_entries=4)
    cluster.start_all()
    leader = await cluster.leader()
    lagging = next(i for i in cluster.voters if i != leader.config.node_id)
    cluster.stop(lagging)
    for i in range(15):
        await leader.append([b"s%d" % i])
    await wait_until(lambda: (leader.metadata_dir / SNAPSHOT_FILE_NAME).exists(), 5, "a leader snapshot")
    expected = [b"s%d" % i for i in range(15)]

    cluster.start(lagging)
    cluster.start(9)  # a brand-new observer: its log starts before the leader's snapshot
    for node_id in (lagging, 9):
        await wait_until(lambda: cluster.machines[node_id].records() == expected, 10,
                         f"node {node_id} to catch up")
        assert cluster.machines[node_id].restores, f"node {node_id} should install the snapshot"
