"""RaftQuorum: a voter or observer of the metadata quorum, bridged between pysyncobj and trio.

pysyncobj runs its own tick thread; the state machine is only ever called there. The trio side
never blocks on it: appends are handed over with a thread-safe queue put, and the tick thread
wakes trio tasks through `TrioToken.run_sync_soon`.

On-disk layout under `log_dir/__cluster_metadata-0/`: `raft.journal` (pysyncobj's journal: each
entry is little-endian length/index/term framing around our command bytes, marker `R` + msgpack),
`raft.journal.meta` ({currentTerm, votedForNodeId, raftCommitIndex} in msgpack, see
kraft.journal_meta) and `raft.snapshot` (msgpack, see kraft.snapshot). Observers keep the same
files, so a restart only fetches what it missed.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from pathlib import Path
from typing import Callable, TypeVar

import trio
from pysyncobj import FAIL_REASON, SyncObjConf
from pysyncobj.syncobj import SyncObjException

from kraft.command import CommandDecodeError, decode_command, encode_command
from kraft.config import QuorumConfig, format_address, validate
from kraft.errors import (CommandApplyError, NotLeaderError, QuorumError, QuorumTimeoutError,
                          RaftPortBindError, SnapshotFormatError)
from kraft.snapshot import read_snapshot_file
from kraft.state_machine import StateMachine
from kraft.status import EMPTY_VIEW, QuorumStatus, RaftView, build_status
from kraft.syncobj_node import (NodeHooks, RaftNode, check_pysyncobj_compatible,
                                check_raft_port_free, quiet_pysyncobj_bind_failures)
from metadata.topic_names import METADATA_DIR_NAME

logger = logging.getLogger(__name__)

JOURNAL_FILE_NAME = "raft.journal"
SNAPSHOT_FILE_NAME = "raft.snapshot"
# "Never" for pysyncobj's time-based compaction when metadata.log.max.snapshot.interval.ms=0.
_NEVER_S = 10 * 365 * 24 * 3600.0

T = TypeVar("T")
Listener = Callable[[], None]


class _Outcome(enum.Enum):
    """Results of applying an entry, other than its offset."""

    FENCED = "fenced"    # proposed in an older term: skipped everywhere
    INVALID = "invalid"  # not a decodable command: skipped everywhere
    FAILED = "failed"    # the state machine raised: skipped


_LEADERSHIP_LOST = {FAIL_REASON.DISCARDED, FAIL_REASON.NOT_LEADER, FAIL_REASON.LEADER_CHANGED,
                    FAIL_REASON.MISSING_LEADER}


class RaftQuorum:
    """One member of the Raft quorum hosting a StateMachine.

    The Raft leader is the active controller and its term is the controller epoch. Offsets are
    Raft log indexes of commands; the first command of a fresh log gets offset 2 or more.
    """

    def __init__(self, config: QuorumConfig, state_machine: StateMachine) -> None:
        self._config = config
        self._state_machine = state_machine
        self._node: RaftNode | None = None
        self._closed = False
        self._address_to_id = {format_address(host, port): node_id
                               for node_id, (host, port) in config.voters.items()}
        self._lock = threading.Lock()
        self._waiters: dict[trio.Event, trio.lowlevel.TrioToken] = {}
        self._listeners: list[Listener] = []
        self._last_term_leader: tuple[int, str | None] = (0, None)

    @property
    def config(self) -> QuorumConfig:
        return self._config

    @property
    def metadata_dir(self) -> Path:
        """Where this node's journal and snapshot live."""
        return Path(self._config.log_dir) / METADATA_DIR_NAME

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Validate the configuration, load the snapshot and journal, bind and start ticking.

        Raises QuorumConfigError (naming the key) for a bad or unsafe configuration and
        QuorumError if the snapshot is damaged or the Raft port cannot be bound.
        """
        if self._node is not None or self._closed:
            raise QuorumError("a RaftQuorum can be started once")
        validate(self._config)
        check_pysyncobj_compatible()
        self.metadata_dir.mkdir(parents=True, exist_ok=True)
        snapshot_path = self.metadata_dir / SNAPSHOT_FILE_NAME
        if snapshot_path.exists():
            try:
                read_snapshot_file(snapshot_path)
            except SnapshotFormatError as exc:
                raise QuorumError(f"damaged metadata snapshot {snapshot_path}: {exc}") from None
        config = self._config
        self_address = None
        if config.is_voter:
            host, port = config.voters[config.node_id]
            self_address = format_address(host, port)
        peers = [address for address in self._address_to_id if address != self_address]
        quiet_pysyncobj_bind_failures()
        if config.is_voter:
            check_raft_port_free(self._config.bind_host or config.voters[config.node_id][0],
                                 config.voters[config.node_id][1])
        node = RaftNode(
            self_address=self_address,
            peer_addresses=peers,
            conf=self._syncobj_conf(snapshot_path),
            hooks=NodeHooks(apply=self._apply, snapshot=self._state_machine.snapshot,
                            restore=self._state_machine.restore, on_view=self._on_view),
            observer_id=None if config.is_voter else config.node_id,
            fsync=config.fsync,
            snapshot_bytes_limit=config.snapshot_interval_bytes,
            source_host=config.source_host,
        )
        if config.is_voter:
            try:
                node.waitBinded()
            except SyncObjException:
                node.close()
                raise RaftPortBindError(f"cannot bind the Raft port {self._bind_address()}") from None
        self._node = node
        logger.info("quorum node %d started as %s (%s)", config.node_id,
                    "voter" if config.is_voter else "observer", self_address or "read-only")

    def close(self) -> None:
        """Stop the Raft thread and release the port and files; blocks briefly (one tick)."""
        if self._closed:
            return
        self._closed = True
        if self._node is not None:
            self._node.close()
        self._wake_all()

    async def aclose(self) -> None:
        """`close` from trio without blocking the event loop."""
        await trio.to_thread.run_sync(self.close)

    def __enter__(self) -> "RaftQuorum":
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- trio API ----------------------------------------------------------------------------

    async def append(self, records: list[bytes], *, timeout_ms: int | None = None,
                     epoch: int | None = None) -> int:
        """Commit `records` as one atomic command; return its offset once applied locally.

        Waits first until this new leader has applied everything committed before its term.
        `epoch` is the controller epoch the records were decided in (Kafka's
        `prepareAppend(epoch, ...)`): if this node now leads a different term, the append is
        refused with NotLeaderError, since the decision may rest on a stale image.
        Raises NotLeaderError(leader_id) if this node is not (or stops being) the leader and
        QuorumTimeoutError on timeout (the command may still commit later).
        """
        if not records:
            raise ValueError("append needs at least one record")
        node = self._running_node()
        deadline = self._deadline(timeout_ms)
        ready_epoch = await self._wait_for(self._ready_epoch, deadline,
                                           "the leader to become ready")
        if epoch is not None and epoch != ready_epoch:
            raise NotLeaderError(self._leader_id(), f"stale controller epoch {epoch}: this "
                                 f"node leads epoch {ready_epoch}")
        epoch = ready_epoch
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()
        outcome: list[tuple[object, int]] = []

        def on_complete(result: object, reason: int) -> None:  # Raft thread
            outcome.append((result, reason))
            try:
                token.run_sync_soon(done.set)
            except trio.RunFinishedError:
                pass

        node.submit(encode_command(epoch, records), on_complete)
        with trio.move_on_at(deadline):
            await done.wait()
        if not outcome:
            raise QuorumTimeoutError(f"append not committed within {self._timeout_s(timeout_ms)} s")
        result, reason = outcome[0]
        if reason == FAIL_REASON.SUCCESS:
            if isinstance(result, int):
                return result
            if result is _Outcome.FAILED:
                raise CommandApplyError("the state machine failed to apply the command")
            raise NotLeaderError(self._leader_id(), f"command fenced: epoch {epoch} ended")
        if reason in _LEADERSHIP_LOST:
            raise NotLeaderError(self._leader_id())
        raise QuorumError(f"append failed (pysyncobj reason {reason})")

    async def wait_ready(self, *, timeout_ms: int | None = None) -> int:
        """Wait until this leader may serve decisions; return its epoch. NotLeaderError otherwise."""
        self._running_node()
        return await self._wait_for(self._ready_epoch, self._deadline(timeout_ms),
                                    "the leader to become ready")

    async def wait_applied(self, offset: int, *, timeout_ms: int | None = None) -> int:
        """Wait until the local state machine has applied `offset`; return the applied offset."""
        self._running_node()

        def applied(view: RaftView) -> int | None:
            return view.applied_offset if view.applied_offset >= offset else None

        return await self._wait_for(applied, self._deadline(timeout_ms), f"offset {offset} to apply")

    async def wait_for_leader(self, *, timeout_ms: int | None = None) -> int:
        """Wait until a leader is known; return its node id."""
        self._running_node()

        def leader(view: RaftView) -> int | None:
            return self._address_to_id.get(view.leader_address) if view.leader_address else None

        return await self._wait_for(leader, self._deadline(timeout_ms), "a leader")

    def status(self) -> QuorumStatus:
        """A consistent snapshot of the quorum as this node knows it; safe from any thread."""
        view = self._node.view() if self._node is not None else EMPTY_VIEW
        return build_status(view, self._config.node_id, self._config.is_voter,
                            self._address_to_id, time.monotonic())

    def add_listener(self, callback: Listener) -> None:
        """Call `callback()` on the Raft thread whenever leader, epoch, commit or applied offset
        change. It must be quick and must not block; cross into trio with TrioToken.run_sync_soon."""
        with self._lock:
            self._listeners.append(callback)

    # -- Raft thread ---------------------------------------------------------------------------

    def _apply(self, entry: bytes, offset: int, term: int) -> object:
        # Must never raise: pysyncobj would retry the same entry forever.
        try:
            command = decode_command(entry)
        except CommandDecodeError as exc:
            logger.error("skipping undecodable entry at offset %d: %s", offset, exc)
            return _Outcome.INVALID
        if command.epoch != term:
            # Proposed by a leader of an earlier term, appended after it lost leadership: its
            # decision may rest on a stale image, so every node skips it (optimistic fencing).
            logger.debug("skipping fenced command at offset %d (epoch %d, term %d)",
                         offset, command.epoch, term)
            return _Outcome.FENCED
        try:
            if offset <= self._state_machine.applied_offset:
                logger.warning("offset %d already applied; not applying it twice", offset)
                return offset
            self._state_machine.apply_batch(command.records, offset, term)
        except Exception:
            logger.exception("state machine failed to apply offset %d; skipped", offset)
            return _Outcome.FAILED
        return offset

    def _on_view(self, view: RaftView, progressed: bool) -> None:
        if not progressed:
            return
        self._log_election(view)
        self._wake_all()
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener()
            except Exception:
                logger.exception("quorum listener failed")

    def _log_election(self, view: RaftView) -> None:
        """A line per leader found and when a known leader is lost, so an election can be
        timed from the logs (the terms it skipped are the rounds that failed). Further
        leaderless terms go to debug: a node that can never reach a majority would
        otherwise fill its log with one line a term."""
        term_leader = (view.term, view.leader_address)
        if term_leader == self._last_term_leader:
            return
        had_leader = self._last_term_leader[1] is not None
        self._last_term_leader = term_leader
        if view.leader_address is None:
            logger.log(logging.INFO if had_leader else logging.DEBUG,
                       "quorum term %d: no leader yet", view.term)
        else:
            logger.info("quorum term %d: leader %s%s", view.term, view.leader_address,
                        " (this node)" if view.is_leader else "")

    def _wake_all(self) -> None:
        with self._lock:
            waiters, self._waiters = self._waiters, {}
        for event, token in waiters.items():
            try:
                token.run_sync_soon(event.set)
            except trio.RunFinishedError:
                pass

    # -- helpers -------------------------------------------------------------------------------

    async def _wait_for(self, check: Callable[[RaftView], T | None], deadline: float, what: str) -> T:
        token = trio.lowlevel.current_trio_token()
        while True:
            event = trio.Event()
            # Register before checking so a change between the two still wakes us.
            with self._lock:
                self._waiters[event] = token
            try:
                result = check(self._running_node().view())
                if result is not None:
                    return result
                with trio.move_on_at(deadline):
                    await event.wait()
                if trio.current_time() >= deadline:
                    result = check(self._running_node().view())
                    if result is not None:
                        return result
                    raise QuorumTimeoutError(f"timed out waiting for {what}")
            finally:
                with self._lock:
                    self._waiters.pop(event, None)

    def _ready_epoch(self, view: RaftView) -> int | None:
        if not view.is_leader:
            raise NotLeaderError(self._address_to_id.get(view.leader_address or ""))
        return view.term if view.is_ready else None

    def _running_node(self) -> RaftNode:
        if self._closed:
            raise QuorumError("the quorum is closed")
        if self._node is None:
            raise QuorumError("the quorum is not started")
        return self._node

    def _leader_id(self) -> int | None:
        return self.status().leader_id

    def _timeout_s(self, timeout_ms: int | None) -> float:
        return (self._config.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000

    def _deadline(self, timeout_ms: int | None) -> float:
        return trio.current_time() + self._timeout_s(timeout_ms)

    def _bind_address(self) -> str:
        host, port = self._config.voters[self._config.node_id]
        return format_address(self._config.bind_host or host, port)

    def _syncobj_conf(self, snapshot_path: Path) -> SyncObjConf:
        c = self._config
        min_timeout = c.election_timeout_ms / 1000
        max_timeout = (c.election_timeout_ms + c.election_backoff_max_ms) / 1000
        return SyncObjConf(
            password=c.password or None,
            autoTick=True,
            raftMinTimeout=min_timeout,
            raftMaxTimeout=max_timeout,
            appendEntriesPeriod=c.heartbeat_interval_ms / 1000,
            connectionTimeout=max(c.fetch_timeout_ms / 1000, max_timeout),
            connectionRetryTime=c.reconnect_backoff_ms / 1000,
            leaderFallbackTimeout=1.5 * c.fetch_timeout_ms / 1000,
            # Send each command at once (and wake the tick thread through its pipe) rather than
            # waiting for the next heartbeat: metadata writes are latency-bound, not volume-bound.
            appendEntriesUseBatch=False,
            commandsWaitLeader=False,
            logCompactionMinEntries=c.snapshot_interval_entries,
            logCompactionMinTime=c.snapshot_interval_ms / 1000 if c.snapshot_interval_ms else _NEVER_S,
            fullDumpFile=str(snapshot_path),
            journalFile=str(self.metadata_dir / JOURNAL_FILE_NAME),
            bindAddress=self._bind_address() if c.is_voter else None,
            # One attempt: a node that cannot bind must fail start(), not tick half-initialised.
            maxBindRetries=1,
            useFork=False,
            dynamicMembershipChange=False,
        )
