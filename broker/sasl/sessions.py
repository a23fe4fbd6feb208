"""New connections' SASL sessions, per listener, reading SCRAM credentials from the latest
metadata image."""

from __future__ import annotations

from typing import Callable, Mapping

from broker.sasl.session import ListenerSasl, SaslSession
from clients.clock import monotonic_ms
from metadata.image import MetadataImage
from metadata.scram import MECHANISM_IDS, ScramCredential


class SaslSessions:
    """Makes the SASL session of each new connection on a SASL listener."""

    def __init__(self, listeners: Mapping[str, ListenerSasl],
                 image: Callable[[], MetadataImage],
                 now_ms: Callable[[], float] = monotonic_ms) -> None:
        self._listeners = dict(listeners)
        self._image = image
        self._now_ms = now_ms

    def credential(self, user: str, mechanism: str) -> ScramCredential | None:
        """`user`'s SCRAM credential for `mechanism` in the current image."""
        mechanism_id = MECHANISM_IDS.get(mechanism)
        if mechanism_id is None:
            return None
        return self._image().scram_credentials.get((user, mechanism_id))

    def new_session(self, listener_name: str) -> SaslSession | None:
        """A fresh session on a SASL listener; None on any other."""
        settings = self._listeners.get(listener_name)
        if settings is None:
            return None
        return SaslSession(settings, self.credential, self._now_ms)
