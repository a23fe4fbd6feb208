"""The listener protocol for components that act on new metadata images."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from metadata.delta import MetadataDelta
from metadata.image import MetadataImage


@runtime_checkable
class MetadataPublisher(Protocol):
    """Receives each new image together with the delta that produced it.

    Called once per applied batch, in offset order, from the thread that applies metadata;
    implementations hand work to their own event loop rather than blocking the caller.
    """

    def on_metadata_update(self, delta: MetadataDelta, new_image: MetadataImage) -> None: ...
