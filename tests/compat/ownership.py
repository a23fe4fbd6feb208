"""Who owns which partition of a group, as its members' assignment callbacks report it: the
evidence that no partition is held by two members at once."""

from __future__ import annotations

import threading
from typing import Any

TP = tuple[str, int]


class Ledger:
    """Owners by partition, fed from each member's callbacks (any thread); a partition
    assigned while another member still owns it is a violation."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.owner: dict[TP, str] = {}
        self.violations: list[str] = []

    def assigned(self, member: str, partitions: list[TP]) -> None:
        with self.lock:
            for tp in partitions:
                other = self.owner.get(tp)
                if other is not None and other != member:
                    self.violations.append(f"{tp} assigned to {member} while {other} owns it")
                self.owner[tp] = member

    def revoked(self, member: str, partitions: list[TP]) -> None:
        with self.lock:
            for tp in partitions:
                if self.owner.get(tp) == member:
                    del self.owner[tp]

    def of(self, member: str) -> set[TP]:
        with self.lock:
            return {tp for tp, m in self.owner.items() if m == member}

    def snapshot(self) -> dict[TP, str]:
        with self.lock:
            return dict(self.owner)

    def counts(self) -> dict[str, int]:
        """Partitions owned, by member."""
        with self.lock:
            out: dict[str, int] = {}
            for member in self.owner.values():
                out[member] = out.get(member, 0) + 1
            return out


def topic_partitions(partitions: Any) -> list[TP]:
    """confluent-kafka's or kafka-python's TopicPartition objects as (topic, partition)."""
    return [(p.topic, p.partition) for p in partitions]


class MemberThread:
    """A group member polling on its own thread until stopped; its callbacks report to
    `ledger` under `name`. Subclasses implement `run(stop)`."""

    def __init__(self, name: str, ledger: Ledger) -> None:
        self.name = name
        self.ledger = ledger
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> "MemberThread":
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop and join the member (once); raise what ended its loop, if anything did."""
        if self._thread.ident is None or (self._stop.is_set() and not self._thread.is_alive()):
            return
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive(), f"{self.name} did not close"
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        try:
            self.run(self._stop)
        except BaseException as exc:  # reported by stop()
            self.error = exc

    def run(self, stop: threading.Event) -> None:
        raise NotImplementedError

    def healthy(self) -> bool:
        """True, or the error that ended the member's loop early (so a wait ends)."""
        if self.error is not None:
            raise self.error
        return True

    def assign_cb(self, partitions: list[TP]) -> None:
        self.ledger.assigned(self.name, partitions)

    def revoke_cb(self, partitions: list[TP]) -> None:
        self.ledger.revoked(self.name, partitions)
