"""The contract between the quorum and the replicated state machine it drives."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class StateMachine(Protocol):
    """A deterministic state machine fed with committed command batches.

    Every method is called on the Raft thread, never concurrently with another.
    """

    def apply_batch(self, records: list[bytes], offset: int, epoch: int) -> None:
        """Apply one committed command atomically.

        Called in log order, exactly once per committed command per process lifetime (after a
        `restore`, from the snapshot's offset on). `offset` is the command's Raft log index and
        `epoch` the Raft term of the leader that appended it.
        """
        ...

    def snapshot(self) -> bytes:
        """Return the whole state as msgpack bytes (never pickle)."""
        ...

    def restore(self, data: bytes, offset: int) -> None:
        """Replace the whole state with a snapshot taken at `offset`."""
        ...

    @property
    def applied_offset(self) -> int:
        """Offset of the last command applied (or restored), or a value below any offset."""
        ...
