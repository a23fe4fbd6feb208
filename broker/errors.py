"""Errors of a node's start-up."""


class NodeStartupError(RuntimeError):
    """The node could not start; the message says why."""
