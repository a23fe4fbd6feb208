"""Who owns which partition of a group, as its members' assignment callbacks report it: the
evidence that no partition is held by two members at once."""

from __future__ import annotations

import threading

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
