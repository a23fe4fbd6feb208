"""The pysyncobj adapter: the one module that knows pysyncobj's internals.

pysyncobj offers no public hook for what the quorum needs, so RaftNode reaches a few
name-mangled members of SyncObj (checked at start-up by `check_pysyncobj_compatible`):

- `_SyncObj__doApplyCommand` is overridden so our entries (marker byte + msgpack) are applied
  as bytes instead of unpickled replicated-method calls;
- `_SyncObj__getEntries` / `_SyncObj__getCurrentLogIndex` read an entry's term and the log end,
  also to keep pysyncobj from truncating matching entries (see `without_needless_truncation`);
- `_SyncObj__transport` / `_SyncObj__thread` reach our transport and join the tick thread;
- `_SyncObj__raftLog` is msync'ed before acknowledgements leave when fsync is on;
- `_SyncObj__mainThread` is pointed at the main thread: pysyncobj stops ticking once the thread
  that built it exits, which would kill the quorum if start() ran in a worker thread;
- `pysyncobj.journal.MetaStorer` is replaced (kraft.journal_meta) so the term/vote file is
  msgpack, not pickle.
- `pysyncobj.tcp_connection.socket` is replaced (kraft.source_binding) so peer connections
  bind to this member's own address before connecting.

Everything here runs on pysyncobj's tick thread unless a docstring says otherwise.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from pysyncobj import SyncObj, SyncObjConf
from pysyncobj.node import Node, TCPNode
from pysyncobj.transport import TCPTransport

from kraft import journal_meta, source_binding
from kraft.command import is_command
from kraft.errors import QuorumError, RaftPortBindError
from kraft.snapshot import Snapshot, read_snapshot_file, write_snapshot_file
from kraft.status import EMPTY_VIEW, PeerView, RaftView

logger = logging.getLogger(__name__)

OBSERVER_HELLO = "raftka_observer_hello"
# Sent between voters that have nothing else to say to each other (two followers), so
# their connection stays up: pysyncobj drops a connection that is silent for its
# connection timeout and drops any message sent while it reconnects, so without these a
# candidate's vote request to the other follower was often lost, and most elections
# took a second round.
KEEPALIVE = "raftka_keepalive"

_MANGLED_METHODS = ("_SyncObj__doApplyCommand", "_SyncObj__getEntries", "_SyncObj__getCurrentLogIndex")
_MANGLED_FIELDS = ("_SyncObj__raftLog", "_SyncObj__mainThread", "_SyncObj__votedForNodeId",
                   "_SyncObj__transport", "_SyncObj__thread")

# (command, offset, term) -> result handed to the submitter's callback.
ApplyHook = Callable[[bytes, int, int], Any]
# A pysyncobj completion callback: (result, FAIL_REASON).
CompletionCallback = Callable[[Any, int], None]


@dataclass(frozen=True)
class NodeHooks:
    """How RaftNode reaches the quorum bridge; all are called on the tick thread."""

    apply: ApplyHook
    snapshot: Callable[[], bytes]
    restore: Callable[[bytes, int], None]
    # (view, progressed): after every tick; progressed when leader/term/commit/applied changed.
    on_view: Callable[[RaftView, bool], None]


class _QuietBindFailure(logging.Filter):
    """Drops pysyncobj's traceback of a Raft port it could not bind (below DEBUG): the
    quorum reports that failure itself, in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != "failed to perform initialization":
            return True
        return logging.getLogger("pysyncobj").isEnabledFor(logging.DEBUG)


_QUIET_BIND_FAILURE = _QuietBindFailure()


def quiet_pysyncobj_bind_failures() -> None:
    """Install the filter once (idempotent)."""
    syncobj_logger = logging.getLogger("pysyncobj.syncobj")
    if _QUIET_BIND_FAILURE not in syncobj_logger.filters:
        syncobj_logger.addFilter(_QUIET_BIND_FAILURE)


def check_raft_port_free(host: str, port: int) -> None:
    """Bind and release the Raft port as pysyncobj will (SO_REUSEADDR), so a taken port is
    reported with its reason; pysyncobj itself only says it could not initialise."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            reason = (exc.strerror or str(exc)).lower()
            raise RaftPortBindError(f"cannot bind the Raft port {host}:{port}: {reason}") from None


def check_pysyncobj_compatible() -> None:
    """Raise QuorumError if the installed pysyncobj lacks the internals RaftNode relies on."""
    missing = [name for name in _MANGLED_METHODS if not hasattr(SyncObj, name)]
    if not source_binding.is_installable():
        missing.append("tcp_connection.socket")
    if missing:
        raise QuorumError(f"unsupported pysyncobj version: missing {', '.join(missing)}")


class QuorumTransport(TCPTransport):
    """TCPTransport that records peer contact, learns observers' node ids, flushes first,
    and keeps idle voter connections up."""

    def __init__(self, syncObj: "RaftNode", selfNode: Node | None, otherNodes: set[Node]) -> None:
        self.last_contact: dict[Node, float] = {}
        self.observer_ids: dict[Node, int] = {}
        super().__init__(syncObj, selfNode, otherNodes)

    def send(self, node: Node, message: Any) -> bool:
        # Every acknowledgement (vote, next_node_idx) leaves through here: make it durable first.
        self._syncObj.flush_journal_if_dirty()
        return super().send(node, message)

    def _connectIfNecessarySingle(self, node: Node) -> bool:
        with source_binding.bound_source(self._syncObj.source_host):
            return super()._connectIfNecessarySingle(node)

    def _sendSelfAddress(self, conn: Any) -> None:
        super()._sendSelfAddress(conn)
        if self._selfIsReadonlyNode:
            # Read-only nodes only say "readonly"; tell the leader who we are for its status.
            conn.send({"type": OBSERVER_HELLO, "node_id": self._syncObj.observer_id})

    def keep_alive(self, nodes: set[Node]) -> None:
        """Send every connected node in `nodes` a message it ignores (tick thread)."""
        for node in nodes:
            # Not through `send`: this acknowledges nothing, so nothing needs flushing.
            TCPTransport.send(self, node, {"type": KEEPALIVE})

    def _onMessageReceived(self, node: Node, message: Any) -> None:
        if isinstance(message, dict) and message.get("type") == KEEPALIVE:
            # Not contact: a deposed leader must not count a follower of the new one.
            return
        self.last_contact[node] = time.monotonic()
        if isinstance(message, dict) and message.get("type") == OBSERVER_HELLO:
            if node in self._readonlyNodes and isinstance(message.get("node_id"), int):
                self.observer_ids[node] = message["node_id"]
            return
        if isinstance(message, dict) and message.get("type") == "append_entries":
            message = self._syncObj.without_needless_truncation(message)
            if message is None:
                return
        super()._onMessageReceived(node, message)

    def _onReadonlyNodeDisconnected(self, node: Node) -> None:
        self.observer_ids.pop(node, None)
        self.last_contact.pop(node, None)
        super()._onReadonlyNodeDisconnected(node)


class RaftNode(SyncObj):
    """A pysyncobj node whose log carries opaque Raftka commands and whose dump is msgpack."""

    def __init__(self, *, self_address: str | None, peer_addresses: list[str], conf: SyncObjConf,
                 hooks: NodeHooks, observer_id: int | None, fsync: bool,
                 snapshot_bytes_limit: int, source_host: str | None = None) -> None:
        check_pysyncobj_compatible()
        # Read by QuorumTransport, which pysyncobj builds inside SyncObj.__init__.
        self.source_host = source_host
        self.observer_id = observer_id
        self._hooks = hooks
        self._fsync = fsync
        self._snapshot_bytes_limit = snapshot_bytes_limit
        self._bytes_since_snapshot = 0
        self._flushed_marker: tuple[int, int, int] | None = None
        self._vote_marker: tuple[int, object] | None = None
        self._destroyed = False
        self._view = EMPTY_VIEW
        self._journal_meta = conf.journalFile + ".meta" if conf.journalFile else None
        # A quarter of the idle time after which pysyncobj drops a peer connection.
        self._keepalive_interval_s = conf.connectionTimeout / 4
        self._next_keepalive = 0.0
        conf.serializer = self._write_dump
        conf.deserializer = self._read_dump
        journal_meta.install()
        source_binding.install()
        super().__init__(self_address, peer_addresses, conf=conf, transportClass=QuorumTransport)
        for name in _MANGLED_FIELDS:
            if not hasattr(self, name):
                self.destroy()
                raise QuorumError(f"unsupported pysyncobj version: missing {name}")
        self._SyncObj__mainThread = threading.main_thread()
        self.addOnTickCallback(self._on_tick)

    # -- called from any thread ------------------------------------------------------------

    def submit(self, entry: bytes, callback: CompletionCallback) -> None:
        """Queue an entry for the leader; thread-safe. `callback` runs on the tick thread."""
        try:
            self._applyCommand(entry, callback)
        except OSError:
            # The wake-up pipe is full: the entry is queued and the next tick picks it up.
            pass

    def view(self) -> RaftView:
        """The latest published view (an immutable object; safe from any thread)."""
        return self._view

    def close(self) -> None:
        """Stop the tick thread and release the port and files; blocks until done."""
        self.destroy()
        thread = self._SyncObj__thread
        if thread is threading.current_thread():
            return  # called from a tick callback: the loop tears down right after this tick
        if thread is not None:
            thread.join()
        if not self._destroyed:
            # The tick thread died early (e.g. bind failure) and never cleaned up.
            self._doDestroy()

    # -- tick thread ---------------------------------------------------------------------

    def _SyncObj__doApplyCommand(self, command: bytes) -> Any:
        offset = self.raftLastApplied + 1
        if is_command(command):
            result = self._hooks.apply(command, offset, self._entry_term(offset))
            self._bytes_since_snapshot += len(command)
            if self._bytes_since_snapshot >= self._snapshot_bytes_limit:
                self._bytes_since_snapshot = 0
                self.forceLogCompaction()
        else:
            result = SyncObj._SyncObj__doApplyCommand(self, command)
        # Completion callbacks run before pysyncobj bumps raftLastApplied: publish it now so a
        # caller woken by its callback already sees its own entry as applied.
        self._view = replace(self._view, applied_offset=offset)
        return result

    def without_needless_truncation(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Rewrite an AppendEntries so pysyncobj only truncates this log on a real conflict.

        pysyncobj deletes every entry after prevLogIdx whenever the follower's log is longer,
        even when the entries match. Its leader pipelines sends and rewinds nextIndex on each
        success reply, so stale-looking messages are routine, and a follower would drop entries
        it has already acknowledged: committed entries could then live on too few nodes.
        Raft only truncates from the first entry whose term differs. Returns None to drop a
        message that carries nothing new and cannot be answered safely.
        """
        if "prevLogIdx" not in message or "transmission" in message:
            return message
        last_index = self._SyncObj__getCurrentLogIndex()
        prev_index = message["prevLogIdx"]
        if prev_index >= last_index:
            return message
        prev = self._SyncObj__getEntries(prev_index, 1)
        if not prev or prev[0][2] != message["prevLogTerm"]:
            return message  # pysyncobj answers with a reset and truncates nothing
        entries = list(message.get("entries") or [])
        mine = self._SyncObj__getEntries(prev_index + 1, len(entries)) if entries else []
        for i, existing in enumerate(mine):
            if existing[2] != entries[i][2]:
                anchor = mine[i - 1] if i else prev[0]
                return {**message, "prevLogIdx": anchor[1], "prevLogTerm": anchor[2], "entries": entries[i:]}
        last_term = self._entry_term(last_index)
        if len(entries) > len(mine):
            return {**message, "prevLogIdx": last_index, "prevLogTerm": last_term, "entries": entries[len(mine):]}
        if last_term == message["term"]:
            # Our tail was written by this same leader, so by Log Matching it equals the leader's
            # log: acknowledge all of it instead of cutting it back.
            return {**message, "prevLogIdx": last_index, "prevLogTerm": last_term, "entries": []}
        return None

    def _entry_term(self, index: int) -> int:
        entries = self._SyncObj__getEntries(index, 1)
        return int(entries[0][2]) if entries else self.raftCurrentTerm

    def _on_tick(self) -> None:
        self.flush_journal_if_dirty()
        now = time.monotonic()
        if self.selfNode is not None and now >= self._next_keepalive:
            self._next_keepalive = now + self._keepalive_interval_s
            self._SyncObj__transport.keep_alive(self.otherNodes)
        view = self._build_view()
        progressed = view.progress_key() != self._view.progress_key()
        self._view = view
        self._hooks.on_view(view, progressed)

    def _build_view(self) -> RaftView:
        status = self.getStatus()
        is_leader = self._isLeader()
        leader = self._getLeader()
        term = self.raftCurrentTerm
        applied = self.raftLastApplied
        transport: QuorumTransport = self._SyncObj__transport
        voters = tuple(
            PeerView(node.id,
                     status.get("match_idx_server_" + node.id) if is_leader else None,
                     transport.last_contact.get(node))
            for node in sorted(self.otherNodes, key=lambda n: n.id))
        observers = tuple(
            PeerView(transport.observer_ids.get(node),
                     status.get("match_idx_server_" + node.id) if is_leader else None,
                     transport.last_contact.get(node))
            for node in sorted(self.readonlyNodes, key=lambda n: n.id))
        return RaftView(
            leader_address=None if leader is None else str(leader.id),
            term=term,
            commit_index=self.raftCommitIndex,
            applied_offset=applied,
            log_end_offset=self._SyncObj__getCurrentLogIndex(),
            is_leader=is_leader,
            # Raft's rule: a leader may serve reads/decisions once an entry of its own term
            # (its no-op) is applied, which implies every earlier commit is applied too.
            is_ready=is_leader and self._entry_term(applied) == term,
            voters=voters,
            observers=observers,
        )

    def flush_journal_if_dirty(self) -> None:
        """msync the journal (and fsync the term/vote file) if they changed since the last flush."""
        if not self._fsync:
            return
        journal = self._SyncObj__raftLog
        last = journal[-1]
        marker = (len(journal), last[1], last[2])
        if marker != self._flushed_marker:
            flush = getattr(journal, "flush", None)
            if flush is not None:
                flush()
            self._flushed_marker = marker
        vote = (self.raftCurrentTerm, self._SyncObj__votedForNodeId)
        if vote != self._vote_marker:
            self._vote_marker = vote
            if self._journal_meta is not None:
                _fsync_path(self._journal_meta)
                _fsync_path(os.path.dirname(self._journal_meta))

    def _write_dump(self, path: str, data: tuple[Any, Any, set[Node | None]]) -> None:
        last, prev, cluster = data
        state = self._hooks.snapshot()
        write_snapshot_file(Path(path), Snapshot(
            offset=int(last[1]),
            epoch=int(last[2]),
            last_entry=(bytes(last[0]), int(last[1]), int(last[2])),
            prev_entry=(bytes(prev[0]), int(prev[1]), int(prev[2])),
            voters=tuple(sorted(str(node.id) for node in cluster if node is not None)),
            state=state,
        ))
        self._bytes_since_snapshot = 0
        logger.info("snapshot written at offset %d (epoch %d, %d state bytes)", last[1], last[2], len(state))

    def _read_dump(self, path: str) -> tuple[tuple[bytes, int, int], tuple[bytes, int, int], set[TCPNode]]:
        try:
            snapshot = read_snapshot_file(Path(path))
            self._hooks.restore(snapshot.state, snapshot.offset)
        except Exception:
            logger.critical("cannot load snapshot %s; this node's state is incomplete", path, exc_info=True)
            raise
        self._view = replace(self._view, applied_offset=snapshot.offset)
        logger.info("restored snapshot at offset %d (epoch %d)", snapshot.offset, snapshot.epoch)
        return snapshot.last_entry, snapshot.prev_entry, {TCPNode(address) for address in snapshot.voters}

    def _doDestroy(self) -> None:
        if self._destroyed:
            return
        self._destroyed = True
        try:
            self.flush_journal_if_dirty()
        except (OSError, ValueError):
            logger.warning("final journal flush failed", exc_info=True)
        super()._doDestroy()
        notifier = getattr(self, "_SyncObj__pipeNotifier", None)
        if notifier is not None:
            # pysyncobj never closes its wake-up pipe.
            for name in ("_PipeNotifier__pipeR", "_PipeNotifier__pipeW"):
                fd = getattr(notifier, name, None)
                if fd is not None:
                    if name.endswith("pipeR"):
                        self._poller.unsubscribe(fd)
                    os.close(fd)


def _fsync_path(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
