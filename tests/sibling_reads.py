"""Catches the suite reading files beside the checkout, which a fresh clone does not have.

A :class:`SiblingReads` installed with :func:`sys.addaudithook` records every ``open``,
``os.listdir`` and ``os.scandir`` of a path inside an entry of the repository's parent
directory other than the repository itself (``../shared/...`` for instance), and every listing
of that parent. An entry that did not exist when the run started counts only when it is read
and still does not exist (that is the dependency a fresh clone trips on); entries the run makes
are its own.

Legitimate paths never count: hidden entries (``~/.cache`` when the checkout sits in a home
directory), entries that hold the interpreter, its site-packages or the temporary directory (a
virtualenv beside the checkout, a checkout under ``/tmp``) and entries allowed later (pytest's
temporary directories). A checkout at the filesystem's root has nothing beside it to watch.
"""

from __future__ import annotations

import getpass
import os
import site
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any, Iterable, NamedTuple

WATCHED_EVENTS = frozenset({"open", "os.listdir", "os.scandir"})


class SiblingRead(NamedTuple):
    event: str
    path: str
    test: str  # the test running when it happened, or "" during collection


def default_allowed() -> list[Path]:
    """Where the interpreter, its packages and temporary files live, pytest's own temporary
    directories included (beside the checkout when it was cloned straight into the
    temporary directory)."""
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable),
             tempfile.gettempdir(), pytest_temp_root(), *sysconfig.get_paths().values(),
             *site.getsitepackages()]
    return [Path(p) for p in paths if p]


def pytest_temp_root() -> str:
    """Where pytest makes its temporary directories: `pytest-of-<user>` in the temporary
    directory."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return os.path.join(tempfile.gettempdir(), f"pytest-of-{user}")


class SiblingReads:
    """Records reads beside ``repo_root``; its :meth:`audit` is the audit hook."""

    def __init__(self, repo_root: Path, allowed: Iterable[Path] = ()) -> None:
        self.repo_root = repo_root.resolve()
        self.reads: list[SiblingRead] = []
        self._allowed = [p.resolve() for p in allowed]
        parent = self.repo_root.parent
        # A checkout at the filesystem's root has nothing beside it to watch.
        self.active = parent != self.repo_root
        self._parent = str(parent)
        self._prefix = self._parent.rstrip(os.sep) + os.sep
        try:
            present = os.listdir(parent) if self.active else []
        except OSError:
            present = []
        self._present = frozenset(present)
        self._ignored: frozenset[str] = frozenset()
        self._watched: frozenset[str] = frozenset()
        self._update()

    def allow(self, path: Path) -> None:
        """Stop watching the entry beside the checkout that holds ``path``, if any."""
        self._allowed.append(path.resolve())
        self._update()

    def _update(self) -> None:
        parent = self.repo_root.parent
        holders = {p.relative_to(parent).parts[0] for p in self._allowed
                   if p != parent and p.is_relative_to(parent)}
        self._ignored = frozenset(holders | {self.repo_root.name})
        self._watched = frozenset(name for name in self._present
                                  if not name.startswith(".") and name not in self._ignored)

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        """The audit hook: cheap for every event that is not a read beside the checkout."""
        if event not in WATCHED_EVENTS or not self.active:
            return
        try:
            path = args[0]
            if isinstance(path, int):  # a file descriptor: its opening was checked
                return
            path = "." if path is None else os.fsdecode(path)
            if not path.startswith(os.sep):
                path = os.path.join(os.getcwd(), path)
            if "/./" in path or "/../" in path or "//" in path or path.endswith(("/.", "/..")):
                path = os.path.normpath(path)
            if path.startswith(self._prefix):
                name = path[len(self._prefix):].split(os.sep, 1)[0]
                if name in self._watched or self._missing_dependency(name, event, args):
                    self._record(event, path)
            elif path == self._parent and event != "open":
                self._record(event, path)  # listing what lies beside the checkout
        except Exception:  # noqa: BLE001  (an audit hook must never break the operation)
            return

    def _missing_dependency(self, name: str, event: str, args: tuple[Any, ...]) -> bool:
        """A read of an entry that was not there at the start and is not there now: what a
        fresh clone sees of ``../shared``. Entries the run makes (temporary directories when
        the checkout's parent is the temporary directory) are not reads of this kind."""
        if not name or name in self._present or name in self._ignored or name.startswith("."):
            return False
        flags = args[2] if event == "open" and len(args) > 2 and isinstance(args[2], int) else 0
        return not flags & os.O_CREAT and not os.path.lexists(self._prefix + name)

    def _record(self, event: str, path: str) -> None:
        self.reads.append(SiblingRead(event, path, os.environ.get("PYTEST_CURRENT_TEST", "")))

    def report(self, limit: int = 20) -> list[str]:
        """One line per recorded read (the first ``limit``), then how many more there were."""
        lines = [f"{r.event} {r.path}" + (f"  (in {r.test})" if r.test else "")
                 for r in self.reads[:limit]]
        if len(self.reads) > limit:
            lines.append(f"... and {len(self.reads) - limit} more")
        return lines
