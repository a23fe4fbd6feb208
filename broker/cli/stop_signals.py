"""How a node process answers SIGTERM and SIGINT, however busy its event loop is.

The handlers are plain Python signal handlers, so they run in the main thread between two
bytecodes even while a long computation holds the trio loop. The first signal asks the loop
to stop gracefully (`TrioToken.run_sync_soon` sets the shutdown event, which the loop acts on
as soon as it runs) and arms a deadline with `signal.setitimer`: if the stop is not done by
then (`raftka.shutdown.timeout.ms`), SIGALRM ends the process after flushing what it can
(`broker.forced_exit`), with status 0. A second SIGTERM or SIGINT ends it at once, the same
way, with status 1.
"""

from __future__ import annotations

import logging
import signal
from types import FrameType
from typing import Callable

from broker.forced_exit import flush_and_exit

logger = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

Handler = Callable[[int, "FrameType | None"], object] | int | None


class StopSignals:
    """Installed for the life of a node process (from the main thread, inside trio.run):
    `request_stop` is called (from the signal handler) on the first signal and must be
    safe there, as `TrioToken.run_sync_soon` is."""

    def __init__(self, request_stop: Callable[[], None], timeout_s: float) -> None:
        self._request_stop = request_stop
        self.timeout_s = timeout_s
        self.stopping = False
        self._previous: dict[int, Handler] = {}

    def install(self) -> None:
        for signum in (*STOP_SIGNALS, signal.SIGALRM):
            self._previous[signum] = signal.getsignal(signum)
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._on_stop_signal)
        signal.signal(signal.SIGALRM, self._on_deadline)

    def uninstall(self) -> None:
        """Disarm the deadline and put the previous handlers back (the stop completed)."""
        signal.setitimer(signal.ITIMER_REAL, 0)
        for signum, handler in self._previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        self._previous.clear()

    def _on_stop_signal(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.stopping:
            flush_and_exit(f"second signal {name}: stopping now")
        self.stopping = True
        signal.setitimer(signal.ITIMER_REAL, self.timeout_s)
        logger.info("signal %s: stopping gracefully (at most %.0f s, "
                    "raftka.shutdown.timeout.ms; a second signal stops at once)",
                    name, self.timeout_s)
        self._request_stop()

    def _on_deadline(self, signum: int, frame: FrameType | None) -> None:
        # The stop was asked for and ends within its bound: status 0, as Kafka's broker
        # exits 0 when its controlled shutdown times out.
        flush_and_exit(f"the graceful stop did not finish within {self.timeout_s:.0f} s "
                       f"(raftka.shutdown.timeout.ms); stopping now, the logs flushed "
                       f"(the next start recovers them as after a crash)", status=0)
