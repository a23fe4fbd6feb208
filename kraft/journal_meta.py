"""The journal's term/vote file (`raft.journal.meta`) in msgpack rather than pysyncobj's pickle.

pysyncobj keeps `{currentTerm, votedForNodeId, raftCommitIndex}` beside its journal through
`pysyncobj.journal.MetaStorer`, which pickles. `install()` swaps in this msgpack storer, so no
file under metadata.log.dir is ever unpickled. Unlike pysyncobj's storer, an unreadable file is
an error rather than a silent reset: forgetting a vote would let this node vote twice in a term.
"""

from __future__ import annotations

import os
from typing import Any

import msgpack
from pysyncobj import journal as syncobj_journal

from kraft.errors import QuorumError

META_KEYS = ("currentTerm", "votedForNodeId", "raftCommitIndex")


class JournalMetaError(QuorumError):
    """`raft.journal.meta` exists but is not a msgpack map of the expected keys."""


class MsgpackMetaStorer:
    """Drop-in for pysyncobj's MetaStorer (same method names), storing msgpack."""

    def __init__(self, path: str) -> None:
        self._path = path

    def getMeta(self) -> dict[str, Any]:  # noqa: N802 (pysyncobj's name)
        """The stored map, or {} when there is no file yet."""
        try:
            with open(self._path, "rb") as stored:
                data = stored.read()
        except FileNotFoundError:
            return {}
        try:
            meta = msgpack.unpackb(data, raw=False)
        except (ValueError, msgpack.UnpackException) as exc:
            raise JournalMetaError(f"damaged journal meta file {self._path}: {exc}") from None
        if not isinstance(meta, dict) or not set(meta) <= set(META_KEYS):
            raise JournalMetaError(f"damaged journal meta file {self._path}: not a map of "
                                   f"{', '.join(META_KEYS)}")
        return meta

    def storeMeta(self, meta: dict[str, Any]) -> None:  # noqa: N802 (pysyncobj's name)
        """Replace the file atomically; the quorum fsyncs it before acknowledging."""
        temporary = self._path + ".tmp"
        with open(temporary, "wb") as out:
            out.write(msgpack.packb(dict(meta), use_bin_type=True))
            out.flush()
        os.replace(temporary, self._path)

    def getPath(self) -> str:  # noqa: N802 (pysyncobj's name)
        return self._path


def install() -> None:
    """Make every pysyncobj FileJournal built from now on store its meta file as msgpack."""
    if not hasattr(syncobj_journal, "MetaStorer"):
        raise QuorumError("unsupported pysyncobj version: no journal.MetaStorer")
    syncobj_journal.MetaStorer = MsgpackMetaStorer  # type: ignore[misc,assignment]
