"""Parking: a request that starts waiting on other requests or on time (a long-poll Fetch,
an acks=all Produce waiting for its replicas, a JoinGroup waiting for the rebalance, a
request forwarded to the controller) gives back its place in the network's request backlog
and the memory its frame was charged, as a request in Kafka's purgatory no longer sits in
its request queue. Otherwise many long-polling clients would hold the backlog, and the node
would stop reading requests from everyone else.

The network layer sets the release for the task that handles a request (`handling`, undone
by `handled`); code about to wait calls `parked()`, which does nothing outside a request's
task.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Callable

# What `parked()` calls in the task handling a request (the network layer sets it directly
# on its hot path; `handling` and `handled` are the same for everyone else).
RELEASE: ContextVar[Callable[[], None] | None] = ContextVar("raftka_request_release",
                                                            default=None)


def parked() -> None:
    """The current request waits from now on: give back its backlog place (idempotent)."""
    release = RELEASE.get()
    if release is not None:
        release()


def handling(release: Callable[[], None]) -> Token:
    """From now on in this task, `parked()` calls `release` (which must be idempotent)."""
    return RELEASE.set(release)


def handled(token: Token) -> None:
    """Undo the `handling` call that returned `token`."""
    RELEASE.reset(token)
