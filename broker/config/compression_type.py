"""What a topic's or the broker's compression.type asks for: the codec produced batches are
converted to, and whether this process can write it (pure: no I/O)."""

from __future__ import annotations

from clients.records.compression import CODEC_IDS, unavailable_reason

# compression.type values that keep whatever codec the producer used.
_PRODUCER = "producer"
# Kafka's name for "no codec" in compression.type; the attribute code is none's.
_UNCOMPRESSED = "uncompressed"


def target_codec(compression_type: str) -> int | None:
    """The attribute code a topic's compression.type converts batches to; None for producer."""
    if compression_type == _PRODUCER:
        return None
    if compression_type == _UNCOMPRESSED:
        return 0
    return CODEC_IDS[compression_type]


def codec_problem(compression_type: str) -> str | None:
    """Why this process cannot write batches in ``compression_type`` (a codec whose package
    is not installed), or None. A topic or broker configured so is refused where the config
    is set, never left to store the producer's codec instead."""
    codec = target_codec(compression_type) if compression_type in _KNOWN else None
    reason = None if codec is None else unavailable_reason(codec)
    if reason is None:
        return None
    return f"compression.type {compression_type} is not supported by this broker: {reason}"


_KNOWN = frozenset(CODEC_IDS) | {_PRODUCER, _UNCOMPRESSED}
