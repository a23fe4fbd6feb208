"""The one error boundary of every `raftka` command: an error becomes one line on stderr.

Commands (and the trio nurseries inside them) may raise exception groups; the line names
the error that caused the failure, not the group around it.
"""

from __future__ import annotations

import logging
import sys

# Errors of these packages carry messages written for the user; anything else is a bug and
# is named by its type too.
_OWN_PACKAGES = frozenset({"broker", "clients", "kraft", "metadata"})
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def configure_logging(level: str) -> None:
    """One line per record on stderr: time, level, logger, message."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def leaf_errors(error: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, in order; the error itself if it
    is not a group."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaf_errors(inner)]
    return [error]


def root_cause(error: BaseException) -> BaseException:
    """The error to report: the first leaf that is not a cancellation or an interrupt
    caused by another failure (trio's Cancelled accompanies the real error in a group)."""
    leaves = leaf_errors(error)
    for leaf in leaves:
        if type(leaf).__name__ != "Cancelled" and not isinstance(leaf, KeyboardInterrupt):
            return leaf
    return leaves[0]


def one_line(error: BaseException) -> str:
    """The error as one line; unexpected error types also say how to see the traceback."""
    text = " ".join(str(error).split()) or type(error).__name__
    package = type(error).__module__.partition(".")[0]
    if package in _OWN_PACKAGES or isinstance(error, (OSError, ValueError)):
        return text
    return f"{type(error).__name__}: {text} (run with --log-level DEBUG for the traceback)"
