"""The node's open-files limit: every partition keeps its active segment's log open, and
every connection is a socket, so a node raises its soft limit to the hard one at start, as
a Kafka node is set up to run with a high limit."""

from __future__ import annotations

import logging
import os

logger = logging.getLogger(__name__)

# Of the open-files limit, what partition logs leave free: a tenth, at least this many.
RESERVED_SHARE = 10
RESERVED_MIN = 64


def raise_open_files_limit() -> int | None:
    """Raise RLIMIT_NOFILE's soft limit to its hard limit; the limit now in force (None where
    the platform has no such limit)."""
    try:
        import resource
    except ImportError:  # not a POSIX system
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or (hard != resource.RLIM_INFINITY and soft >= hard):
        return None if soft == resource.RLIM_INFINITY else soft
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 1_048_576)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    except (OSError, ValueError) as exc:
        logger.warning("could not raise the open-files limit from %d to %d: %s", soft, wanted, exc)
        return soft
    logger.info("open-files limit raised from %d to %d", soft, wanted)
    return wanted


def descriptors_in_use() -> int:
    """About how many descriptors the process holds: the kernel hands out the lowest free
    number, so a new descriptor's number counts those below it."""
    probe = os.open(os.devnull, os.O_RDONLY)
    os.close(probe)
    return probe


def log_descriptor_ceiling() -> int | None:
    """The descriptor count past which no new partition log is opened, so that connections
    and the node's own files keep a share of the open-files limit (None: no limit)."""
    try:
        import resource
    except ImportError:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return None
    return soft - max(RESERVED_MIN, soft // RESERVED_SHARE)
