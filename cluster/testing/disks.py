"""Log dirs on small tmpfs mounts, so a test or a chaos run can fill a broker's disk.

`Tmpfs` mounts one (root and CAP_SYS_ADMIN needed) and fills or frees it with a ballast file;
`move_log_dirs` restarts a node with its log dirs on such mounts, formatted as
``raftka storage format`` would have formatted them.
"""

from __future__ import annotations

import base64
import os
import subprocess
import uuid
from pathlib import Path
from typing import Protocol

from clients.common.properties import format_properties, load_properties
from cluster.launcher import ClusterInfo


class DiskToolError(Exception):
    """A tmpfs cannot be mounted here (not root, or no CAP_SYS_ADMIN)."""


class Tmpfs:
    """A tmpfs of `size` bytes mounted at `path`; `fill` leaves `leave_free` bytes."""

    def __init__(self, path: Path, size: int) -> None:
        self.path = path
        self.size = size
        self.ballast = path / "ballast"
        self.mounted = False
        path.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                                 str(path)], capture_output=True, text=True)
        if result.returncode != 0:
            raise DiskToolError(f"cannot mount a tmpfs (needs root and CAP_SYS_ADMIN): "
                                f"{result.stderr.strip()}")
        self.mounted = True

    def fill(self, leave_free: int = 0) -> None:
        """Take all but `leave_free` of the space that is free now with the ballast."""
        stats = os.statvfs(self.path)
        free = stats.f_bavail * stats.f_frsize
        with open(self.ballast, "ab") as ballast:
            try:
                ballast.write(b"\0" * max(0, free - leave_free))
            except OSError:
                pass              # full already: that is what was asked for

    def free_space(self) -> None:
        self.ballast.unlink(missing_ok=True)

    def unmount(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True)
            self.mounted = False


class RestartableCluster(Protocol):
    info: ClusterInfo

    def restart(self, node: int, timeout: float = ...) -> None: ...


def move_log_dirs(cluster: RestartableCluster, node: int, dirs: list[Path]) -> None:
    """Restart `node` with `dirs` as its log.dirs (formatted like storage format does); its
    metadata log stays where it was."""
    info = cluster.info.node(node)
    props = load_properties(info.config_path)
    old = props["log.dirs"]
    meta = load_properties(Path(old) / "meta.properties")
    props.update({"log.dirs": ",".join(str(d) for d in dirs), "metadata.log.dir": old})
    info.config_path.write_text(format_properties(props))
    for directory in dirs:
        text = format_properties({**meta, "directory.id": _dir_id()})
        (directory / "meta.properties").write_text(text)
    cluster.restart(node)


def _dir_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
