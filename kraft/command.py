"""Wire and journal form of one replicated command: a marker byte, then msgpack [epoch, records].

The marker keeps our commands apart from pysyncobj's own entry types (0-3: regular, no-op,
membership, version), so they reach the journal as plain bytes instead of pickles.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgpack

COMMAND_MARKER = b"R"


class CommandDecodeError(ValueError):
    """The entry is not a well-formed Raftka command."""


@dataclass(frozen=True)
class Command:
    """A batch of records proposed by the leader of term `epoch`; it only applies in that term."""

    epoch: int
    records: list[bytes]


def is_command(entry: bytes) -> bool:
    """True if a journal entry carries a Raftka command."""
    return entry[:1] == COMMAND_MARKER


def encode_command(epoch: int, records: list[bytes]) -> bytes:
    """Encode a command for pysyncobj's log."""
    return COMMAND_MARKER + msgpack.packb([epoch, list(records)], use_bin_type=True)


def decode_command(entry: bytes) -> Command:
    """Decode a journal entry made by `encode_command`; raises CommandDecodeError."""
    if not is_command(entry):
        raise CommandDecodeError("not a Raftka command")
    try:
        epoch, records = msgpack.unpackb(entry[1:], raw=False, use_list=True)
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise CommandDecodeError(f"undecodable command: {exc}") from None
    if not isinstance(epoch, int) or not isinstance(records, list):
        raise CommandDecodeError("command is not [epoch, records]")
    if not all(isinstance(record, bytes) for record in records):
        raise CommandDecodeError("command records must be bytes")
    return Command(epoch, records)
