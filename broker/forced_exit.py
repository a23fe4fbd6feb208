"""Ending the process at once (a second stop signal, or a stop that overran its timeout),
after flushing what can be flushed without the event loop: the parts of the node register a
flush here (the partition logs fsync their active segments), then the log handlers flush.

A flush may run from a signal handler, between any two bytecodes of the interrupted code, so
it must only push out what was already written (fsync a file descriptor), never change
state; the next start recovers as after a crash, with the written records on disk.
"""

from __future__ import annotations

import logging
import os
from typing import Callable, NoReturn

logger = logging.getLogger(__name__)

# Exit status of a forced end (a clean stop exits 0).
FORCED_EXIT_STATUS = 1

_flushes: list[Callable[[], None]] = []


def register_flush(flush: Callable[[], None]) -> Callable[[], None]:
    """Run `flush` before a forced exit; returns the function that unregisters it."""
    _flushes.append(flush)

    def unregister() -> None:
        if flush in _flushes:
            _flushes.remove(flush)

    return unregister


def flush_and_exit(reason: str, status: int = FORCED_EXIT_STATUS) -> NoReturn:
    """Log `reason`, run every registered flush (each failure ignored), flush the log
    handlers, and end the process with `status` without unwinding anything."""
    try:
        logger.critical("%s", reason)
    except BaseException:  # noqa: BLE001 - nothing may stop the exit
        pass
    for flush in list(_flushes):
        try:
            flush()
        except BaseException:  # noqa: BLE001
            pass
    for handler in list(logging.getLogger().handlers):
        try:
            handler.flush()
        except BaseException:  # noqa: BLE001
            pass
    os._exit(status)
