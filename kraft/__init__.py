"""The Raft quorum of the metadata log (KRaft design) on pysyncobj: voters, observers, snapshots."""

from kraft.config import QuorumConfig, parse_voters
from kraft.errors import (CommandApplyError, NotLeaderError, QuorumConfigError, QuorumError,
                          QuorumTimeoutError, SnapshotFormatError)
from kraft.quorum import RaftQuorum
from kraft.state_machine import StateMachine
from kraft.status import QuorumStatus, ReplicaStatus

__all__ = [
    "CommandApplyError",
    "NotLeaderError",
    "QuorumConfig",
    "QuorumConfigError",
    "QuorumError",
    "QuorumStatus",
    "QuorumTimeoutError",
    "RaftQuorum",
    "ReplicaStatus",
    "SnapshotFormatError",
    "StateMachine",
    "parse_voters",
]
