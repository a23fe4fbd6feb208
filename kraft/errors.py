"""Errors raised by the Raft quorum."""

from __future__ import annotations


class QuorumError(Exception):
    """Base class of every error the quorum raises."""


class RaftPortBindError(QuorumError):
    """The Raft port could not be bound (taken, or not an address of this host)."""


class QuorumConfigError(QuorumError):
    """The quorum configuration is invalid or unsafe; the message names the offending key."""


class NotLeaderError(QuorumError):
    """This node is not the Raft leader (Kafka's NOT_CONTROLLER); `leader_id` is the known leader or None."""

    def __init__(self, leader_id: int | None, message: str | None = None) -> None:
        self.leader_id = leader_id
        super().__init__(message or f"not the leader; current leader: {leader_id}")


class QuorumTimeoutError(QuorumError):
    """The operation did not complete in time; an append may still commit later."""


class CommandApplyError(QuorumError):
    """The command committed but the state machine failed to apply it (it was skipped everywhere)."""


class SnapshotFormatError(QuorumError):
    """A snapshot file is truncated, corrupt or of an unknown version."""
