"""Loading one partition of a coordinator's internal topic (Kafka's CoordinatorLoader):
every record from the log start, decoded and replayed by the coordinator's state machine a
slice at a time, with a checkpoint after each so a large partition does not stall the
broker. What the runtime asks of a state machine is `CoordinatorStateMachine`."""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Protocol

import trio

from broker.coordinator.log import CoordinatorLog

logger = logging.getLogger(__name__)

# Told the offset of a record that cannot be decoded, and why; the record is skipped.
Unreadable = Callable[[int, Exception], None]


class Replay(Protocol):
    """One partition's records replayed in log order, before they are installed."""

    def apply(self, records: list[Any]) -> None: ...


class CoordinatorStateMachine(Protocol):
    """A coordinator's state over the partitions it has loaded, as the runtime drives it
    (Kafka's CoordinatorShard, one object for every partition here). No I/O: the runtime
    reads the log and calls these in order."""

    def decode(self, chunk: bytes, unreadable: Unreadable) -> Iterator[Any]:
        """The records of whole batches `chunk`, in log order; a record that cannot be
        decoded goes to `unreadable` instead."""
        ...

    def new_replay(self, partition: int) -> Replay:
        ...

    def install(self, partition: int, epoch: int, replay: Any) -> str:
        """Serve what a finished `replay` of `partition` found, as its coordinator at
        `epoch`; a few words for the log line (how many groups, ids, ...)."""
        ...

    def unload(self, partition: int, loaded: bool) -> None:
        """Forget `partition` (`loaded`: it was installed; else its load stopped)."""
        ...


@dataclass(frozen=True)
class LoadSettings:
    """How a partition is loaded. A read that fails (most often: the replica manager does
    not lead the partition yet) is retried after `retry_s`, doubling up to `max_retry_s`,
    `attempts` times (None: until it succeeds); then the failure is logged as an error, the
    partition answers COORDINATOR_NOT_AVAILABLE, and loading starts over after `give_up_s`.
    Every `records_per_yield` records, loading lets the other tasks run."""

    retry_s: float = 0.1
    max_retry_s: float = 2.0
    attempts: int | None = 20
    give_up_s: float = 30.0
    records_per_yield: int = 2000

    def retry_delay(self, attempt: int) -> float:
        return min(self.retry_s * 2 ** attempt, self.max_retry_s)


async def replay_partition(log: CoordinatorLog, topic: str, partition: int,
                           state: CoordinatorStateMachine, records_per_yield: int,
                           still_loading: Callable[[], bool]) -> Any | None:
    """Every record of `partition` replayed into `state.new_replay`; None if
    `still_loading()` turned false meanwhile. A record that cannot be decoded is logged and
    skipped: one bad record must not keep the whole partition unavailable. Raises what the
    log raises (CoordinatorLogError, RecordsError)."""
    replay = state.new_replay(partition)
    skipped = 0

    def unreadable(offset: int, error: Exception) -> None:
        nonlocal skipped
        skipped += 1
        logger.error("%s-%d: skipping the unreadable record at offset %d: %s", topic,
                     partition, offset, error)

    for chunk in log.read_from(partition, log.log_start_offset(partition)):
        records = state.decode(chunk, unreadable)
        while True:
            part = list(itertools.islice(records, records_per_yield))
            if not part:
                break
            replay.apply(part)
            await trio.sleep(0)
            if not still_loading():
                return None
        await trio.sleep(0)
        if not still_loading():
            return None
    if skipped:
        logger.error("%s-%d: %d unreadable record(s) skipped; what they held is missing",
                     topic, partition, skipped)
    return replay
