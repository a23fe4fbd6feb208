"""What a page may wait for, and what it says about the parts of the cluster it could not
reach.

Every page has a deadline (``--page-timeout``). Each read of the cluster inside the page
runs until that deadline at most; a read that fails or runs out of time yields None, so the
page renders its other panels, and leaves one line for the page's banner that names the part
that could not be reached: the cluster as a whole (through any broker), one broker, or a
metrics endpoint. A broker's error answer about the page's own subject (an unknown topic)
is the page's answer, and is raised.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Awaitable, Callable, Mapping, Sequence, TypeVar

import trio

from clients.admin import BrokerNode
from clients.net import KafkaConnectionError
from clients.protocol import KafkaError, ProtocolError

T = TypeVar("T")
Read = Callable[[], Awaitable[Any]]

# The clients' request and connection timeouts are cut to this share of the page's time,
# so that a silent broker is given up (and another tried, where any broker will do) while
# the page still has time; the admin client's retries (default.api.timeout.ms) to the
# second share, so that a cluster that cannot be reached fails with its cause in time.
REQUEST_SHARE = 0.4
RETRY_SHARE = 0.8
TIMEOUT_SHARES = {"request.timeout.ms": REQUEST_SHARE,
                  "socket.connection.setup.timeout.ms": REQUEST_SHARE,
                  "default.api.timeout.ms": RETRY_SHARE}
# Client messages end with how often a call was retried; the banner says it once.
_RETRIED = " (still failing after "
_NONE_REACHABLE = "no broker is reachable: "
# Failures that mean the cluster, or a broker, could not be reached or understood.
UNREACHABLE = (KafkaConnectionError, ProtocolError, OSError)


@dataclass(frozen=True)
class Part:
    """What one read asks for: ``what`` (the panel, e.g. "the topics") from any broker, or
    from ``broker`` when the request names one. With ``answers`` a broker's KafkaError is
    the page's answer (an unknown topic on that topic's page), raised instead of shown."""

    what: str
    broker: BrokerNode | None = None
    answers: bool = False


def detail(error: BaseException) -> str:
    """A client error's text without what the banner line says already."""
    text = str(error) or type(error).__name__
    if text.startswith(_NONE_REACHABLE):
        text = text[len(_NONE_REACHABLE):]
    return text.split(_RETRIED)[0]


def broker_name(broker: BrokerNode) -> str:
    return f"broker {broker.node_id} ({broker.host}:{broker.port})"


def seconds(value: float) -> str:
    """``2 s``, ``0.4 s``: a waited time as the banner shows it (to 0.1 s)."""
    return f"{max(round(value, 1), 0.1):g} s"


def failed_line(part: Part, bootstrap: str, error: BaseException) -> str:
    """The banner line of a read that failed: the broker or cluster that could not be
    reached, or the panel a broker's error answer left empty."""
    if isinstance(error, KafkaError):
        asked = f" (asked {broker_name(part.broker)})" if part.broker is not None else ""
        return f"{part.what} unavailable{asked}: {detail(error)}"
    if part.broker is not None:
        return f"{broker_name(part.broker)} unreachable: {detail(error)}"
    if isinstance(error, KafkaConnectionError):
        return f"no broker reachable at {bootstrap}: {detail(error)}"
    return f"{part.what} unavailable: {detail(error)}"


def silent_broker_line(broker: BrokerNode, waited_s: float) -> str:
    return f"{broker_name(broker)} did not answer within {seconds(waited_s)}"


def silent_cluster_line(bootstrap: str, waited_s: float, what: Sequence[str]) -> str:
    """One line for every read through any broker that the page's deadline cut short."""
    return (f"no answer from the cluster at {bootstrap} within {seconds(waited_s)}: "
            f"{', '.join(what)} unavailable")


def bounded_config(config: Mapping[str, Any], page_timeout_s: float) -> dict[str, Any]:
    """``config`` with the client's request, connection and retry timeouts cut to their
    share of a page's time (smaller given values stay): a silent broker is then given up,
    and another tried, while the page still has time."""
    bounded = dict(config)
    for key, share in TIMEOUT_SHARES.items():
        cap = max(int(page_timeout_s * share * 1000), 1)
        given = bounded.get(key)
        try:
            bounded[key] = cap if given is None else min(int(given), cap)
        except (TypeError, ValueError):
            pass  # left for the client's config check, which names the key
    return bounded


class PageReads:
    """One page's reads of the cluster against one deadline, and its banner lines."""

    def __init__(self, timeout_s: float, bootstrap: str) -> None:
        self.timeout_s = timeout_s
        self.bootstrap = bootstrap
        self.deadline = trio.current_time() + timeout_s
        self.answered = 0  # reads that returned
        self._lines: list[str] = []
        # Reads through any broker that ran out of time, said in one line.
        self._silent: list[str] = []
        self._silent_s = 0.0

    @property
    def problems(self) -> list[str]:
        """The banner's lines, in the order they arose (the cluster's silence first)."""
        if not self._silent:
            return list(self._lines)
        return [silent_cluster_line(self.bootstrap, self._silent_s, self._silent),
                *self._lines]

    @property
    def reached_nothing(self) -> bool:
        """Every read failed: the page shows nothing of the cluster."""
        return bool(self.problems) and not self.answered

    def note(self, line: str) -> None:
        if line not in self._lines:
            self._lines.append(line)

    def _note_silence(self, part: Part, waited_s: float) -> None:
        if part.broker is not None:
            self.note(silent_broker_line(part.broker, waited_s))
        elif part.what not in self._silent:
            self._silent.append(part.what)
            self._silent_s = max(self._silent_s, waited_s)

    async def one(self, part: Part, read: Callable[[], Awaitable[T]]) -> T | None:
        """``read()``'s result, or None (and a banner line) when it fails or the page's
        deadline passes first."""
        started = trio.current_time()
        if started >= self.deadline:
            self.note(f"{part.what} not read: the page's {seconds(self.timeout_s)} were "
                      f"spent")
            return None
        with trio.move_on_at(self.deadline):
            try:
                result = await read()
            except KafkaError as exc:
                if part.answers:
                    raise
                self.note(failed_line(part, self.bootstrap, exc))
                return None
            except UNREACHABLE as exc:
                self.note(failed_line(part, self.bootstrap, exc))
                return None
            self.answered += 1
            return result
        self._note_silence(part, trio.current_time() - started)
        return None

    async def together(self, *tasks: Callable[[], Awaitable[Any]]) -> list[Any]:
        """Run ``tasks`` (chains of reads, each read through ``one``) at once, their results
        in order; a raised answer is raised as it is once all have ended."""
        results: list[Any] = [None] * len(tasks)
        raised: list[KafkaError] = []

        async def run(index: int, task: Callable[[], Awaitable[Any]]) -> None:
            try:
                results[index] = await task()
            except KafkaError as exc:
                raised.append(exc)

        async with trio.open_nursery() as nursery:
            for index, task in enumerate(tasks):
                nursery.start_soon(run, index, task)
        if raised:
            raise raised[0]
        return results

    async def each(self, reads: Sequence[tuple[Part, Read]]) -> list[Any]:
        """Every read at once (see ``one``), their results in order."""
        return await self.together(*(partial(self.one, part, read) for part, read in reads))
