"""Whether the request the current task handles is handled alone on its connection: the
network layer reads nothing more from that connection until it is answered (a large request,
see broker.network.large_requests). Such a request may let the node's other connections run
midway, for no later request of the same client can overtake it; any other request keeps its
appends free of checkpoints, which is what keeps a producer's pipelined batches in order."""

from __future__ import annotations

from contextvars import ContextVar

HANDLED_ALONE: ContextVar[bool] = ContextVar("raftka_handled_alone", default=False)


def handled_alone() -> bool:
    """True in the task of a request its connection handles before reading the next."""
    return HANDLED_ALONE.get()
