"""BrokerHeartbeatTracker: the controller's in-memory view of broker liveness.

Heartbeat times are never written to the metadata log (a new active controller starts
with fresh sessions, as Kafka's does); this object is plain state, fed by the controller.
"""

from __future__ import annotations

from typing import Any, Iterable

from metadata.delta import MetadataDelta
from metadata.image import MetadataImage


class BrokerHeartbeatTracker:
    """Last contact time and registration offset per broker. Not thread-safe."""

    def __init__(self) -> None:
        self._last_contact_ms: dict[int, int] = {}
        self._registration_offsets: dict[int, int] = {}
        # (broker epoch, dir ids) each broker last reported offline in a heartbeat.
        self._offline_dirs: dict[int, tuple[int, frozenset[Any]]] = {}

    def touch(self, broker_id: int, now_ms: int) -> None:
        """Record contact (a registration or heartbeat) from `broker_id`."""
        self._last_contact_ms[broker_id] = now_ms

    def last_contact_ms(self, broker_id: int) -> int | None:
        return self._last_contact_ms.get(broker_id)

    def has_valid_session(self, broker_id: int, now_ms: int, session_timeout_ms: int) -> bool:
        last = self._last_contact_ms.get(broker_id)
        return last is not None and now_ms - last < session_timeout_ms

    def expired(self, now_ms: int, session_timeout_ms: int) -> list[int]:
        """Brokers last heard from `session_timeout_ms` or longer ago, sorted."""
        return sorted(
            bid for bid, last in self._last_contact_ms.items() if now_ms - last >= session_timeout_ms
        )

    def reset(self, image: MetadataImage, now_ms: int) -> None:
        """Start a fresh session for every registered broker (on becoming active controller)."""
        self._last_contact_ms = {bid: now_ms for bid in image.brokers}

    def remove(self, broker_id: int) -> None:
        self._last_contact_ms.pop(broker_id, None)
        self._registration_offsets.pop(broker_id, None)
        self._offline_dirs.pop(broker_id, None)

    def report_offline_dirs(self, broker_id: int, broker_epoch: int,
                            dirs: Iterable[Any]) -> frozenset[Any]:
        """Record the log dirs `broker_id` reports offline; returns those not reported
        before in this broker epoch (a restarted broker starts with none)."""
        reported = frozenset(dirs)
        epoch, known = self._offline_dirs.get(broker_id, (broker_epoch, frozenset()))
        if epoch != broker_epoch:
            known = frozenset()
        self._offline_dirs[broker_id] = (broker_epoch, reported)
        return reported - known

    def registration_offset(self, broker_id: int) -> int | None:
        """Metadata offset of the broker's current registration record, if seen."""
        return self._registration_offsets.get(broker_id)

    def on_metadata_update(self, delta: MetadataDelta, new_image: MetadataImage) -> None:
        """Learn registration offsets from applied metadata (MetadataPublisher)."""
        self._registration_offsets.update(delta.broker_registration_offsets())
        for bid, (_, current) in delta.changed_brokers().items():
            if current is None:
                self.remove(bid)
