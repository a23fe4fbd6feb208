"""MetadataStateMachine: the quorum's StateMachine over `metadata` images and deltas.

Each committed command is one batch of encoded metadata records. The batch is decoded and
replayed into a MetadataDelta of the current image; only when every record replays is the new
image published, by swapping one attribute. Readers on any thread read `.image` without locks
and always see a whole batch or none of it.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import threading

import msgpack

from metadata.delta import MetadataDelta
from metadata.errors import MetadataRecordError
from metadata.image import MetadataImage
from metadata.publisher import MetadataPublisher
from metadata.record_codec import decode_record, encode_record
from metadata.records import NoOpRecord

logger = logging.getLogger(__name__)

SNAPSHOT_FORMAT_VERSION = 1
# How many rejected batch offsets to remember for `was_rejected` (the controller asks right
# after its own append, so a short memory is enough).
_REJECTED_MEMORY = 256


class MetadataStateMachine:
    """The metadata log's state machine: an immutable MetadataImage, replaced batch by batch.

    `apply_batch`, `snapshot` and `restore` run on the Raft thread. Publishers added with
    `add_publisher` are called there too, after each batch, in offset order: they must be
    quick, must not block and must be thread-safe (hand work to trio with
    `TrioToken.run_sync_soon`). A publisher that raises is logged and the others still run.
    """

    def __init__(self, image: MetadataImage | None = None) -> None:
        self._image = image if image is not None else MetadataImage.empty()
        # Copy-on-write so the Raft thread iterates without a lock while others add.
        self._publishers: tuple[MetadataPublisher, ...] = ()
        self._publishers_lock = threading.Lock()
        self._rejected: collections.deque[int] = collections.deque(maxlen=_REJECTED_MEMORY)

    @property
    def image(self) -> MetadataImage:
        """The latest applied image; safe to read from any thread."""
        return self._image

    @property
    def applied_offset(self) -> int:
        """Offset of the last batch applied, skipped or restored; -1 before any."""
        return self._image.offset

    def add_publisher(self, publisher: MetadataPublisher) -> None:
        """Call `publisher.on_metadata_update(delta, image)` after every batch from now on."""
        with self._publishers_lock:
            self._publishers = (*self._publishers, publisher)

    def remove_publisher(self, publisher: MetadataPublisher) -> None:
        with self._publishers_lock:
            self._publishers = tuple(p for p in self._publishers if p is not publisher)

    def was_rejected(self, offset: int) -> bool:
        """True if the batch at `offset` failed to replay and was skipped (recent ones only)."""
        return offset in self._rejected

    # -- StateMachine (Raft thread) -------------------------------------------------------------

    def apply_batch(self, records: list[bytes], offset: int, epoch: int) -> None:
        """Replay one committed batch atomically; a batch that does not replay is skipped whole.

        Skipping is deterministic (same bytes, same image on every node), so every node skips
        it alike; the offset still advances.
        """
        previous = self._image
        delta = MetadataDelta(previous)
        try:
            decoded = [decode_record(raw) for raw in records]
            if all(type(record) is NoOpRecord for record in decoded):
                # Nothing to replay: advance the offset without rebuilding the image maps.
                image = dataclasses.replace(previous, offset=offset, epoch=epoch)
            else:
                for record in decoded:
                    delta.replay(record, offset, epoch)
                image = previous.apply(delta)
        except Exception as exc:
            # Anything but a record error is a bug in replay: keep its traceback.
            logger.error("skipping metadata batch at offset %d (epoch %d): %s", offset, epoch, exc,
                         exc_info=not isinstance(exc, MetadataRecordError))
            self._rejected.append(offset)
            delta = MetadataDelta(previous)
            image = dataclasses.replace(previous, offset=offset, epoch=epoch)
        self._image = image
        self._publish(delta, image)

    def snapshot(self) -> bytes:
        """msgpack of [format version, offset, epoch, [encoded records of the image]]."""
        image = self._image
        encoded = [encode_record(record) for record in image.to_records()]
        return msgpack.packb([SNAPSHOT_FORMAT_VERSION, image.offset, image.epoch, encoded],
                             use_bin_type=True)

    def restore(self, data: bytes, offset: int) -> None:
        """Replace the image with the snapshot's; publishers see a delta from an empty image.

        Raises MetadataRecordError if the snapshot is not one `snapshot()` produced.
        """
        image, delta = load_snapshot(data, offset)
        self._image = image
        self._publish(delta, image)

    def _publish(self, delta: MetadataDelta, image: MetadataImage) -> None:
        for publisher in self._publishers:
            try:
                publisher.on_metadata_update(delta, image)
            except Exception:
                logger.exception("metadata publisher %r failed at offset %d", publisher, image.offset)


def load_snapshot(data: bytes, offset: int) -> tuple[MetadataImage, MetadataDelta]:
    """Rebuild (image, delta from the empty image) from `MetadataStateMachine.snapshot()` bytes.

    `offset` is authoritative for the image offset (the quorum's snapshot offset).
    """
    try:
        version, _, epoch, encoded = msgpack.unpackb(data, raw=False, use_list=True)
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise MetadataRecordError(f"undecodable metadata snapshot: {exc}") from None
    if version != SNAPSHOT_FORMAT_VERSION or not isinstance(encoded, list) or type(epoch) is not int:
        raise MetadataRecordError(f"unsupported metadata snapshot (format {version!r})")
    delta = MetadataDelta(MetadataImage.empty())
    for raw in encoded:
        if not isinstance(raw, bytes):
            raise MetadataRecordError("metadata snapshot records must be bytes")
        delta.replay(decode_record(raw), offset, epoch)
    delta.offset, delta.epoch = offset, epoch
    return delta.apply(), delta
