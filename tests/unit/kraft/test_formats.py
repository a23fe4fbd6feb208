"""Command and snapshot encodings."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft import QuorumConfig, QuorumError, RaftQuorum
from kraft.command import CommandDecodeError, decode_command, encode_command, is_command
from kraft.quorum import METADATA_DIR_NAME, SNAPSHOT_FILE_NAME
from kraft.snapshot import Snapshot, decode_snapshot, encode_snapshot, write_snapshot_file
from tests.unit.kraft.support import ListStateMachine

SNAPSHOT = Snapshot(offset=42, epoch=3, last_entry=(b"R\x92", 42, 3), prev_entry=(b"\x01", 41, 3),
                    voters=("127.0.0.1:20001",), state=b"\x91\x01")


def test_command_round_trip() -> None:
    entry = encode_command(7, [b"a", b"", b"\x00" * 300])
    assert is_command(entry) and not is_command(b"\x01")
    command = decode_command(entry)
    assert command.epoch == 7 and command.records == [b"a", b"", b"\x00" * 300]


@pytest.mark.parametrize("entry", [b"\x00abc", b"R", b"R\xc1", b"R\x92\xa1x\x90", b"R\x92\x01\x91\x05"])
def test_command_decode_rejects_garbage(entry: bytes) -> None:
    with pytest.raises(CommandDecodeError):
        decode_command(entry)


def test_snapshot_round_trip() -> None:
    assert decode_snapshot(encode_snapshot(SNAPSHOT)) == SNAPSHOT


@pytest.mark.parametrize("damage", ["magic", "flip", "truncate"])
def test_snapshot_damage_is_detected(damage: str) -> None:
    data = bytearray(encode_snapshot(SNAPSHOT))
    if damage == "magic":
        data[0] ^= 0xFF
    elif damage == "flip":
        data[-1] ^= 0x01
    else:
        del data[-3:]
    with pytest.raises(QuorumError):
        decode_snapshot(bytes(data))


def test_start_refuses_a_damaged_snapshot(tmp_path: Path) -> None:
    directory = tmp_path / METADATA_DIR_NAME
    directory.mkdir()
    write_snapshot_file(directory / SNAPSHOT_FILE_NAME, SNAPSHOT)
    path = directory / SNAPSHOT_FILE_NAME
    path.write_bytes(path.read_bytes()[:-1])
    quorum = RaftQuorum(QuorumConfig(node_id=1, voters={1: ("127.0.0.1", 20001)}, log_dir=tmp_path),
                        ListStateMachine())
    with pytest.raises(QuorumError, match="damaged metadata snapshot"):
        quorum.start()
