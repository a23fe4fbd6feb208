"""The node's open-files limit: every partition keeps its active segment's log open, and
every connection is a socket, so a node raises its soft limit to the hard one at start, as
a Kafka node is set up to run with a high limit."""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


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
