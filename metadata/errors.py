"""Metadata exceptions. Error codes are Kafka's, from `clients.protocol.ErrorCode`."""

from __future__ import annotations


class MetadataRecordError(ValueError):
    """A metadata record could not be encoded or decoded."""


class MetadataReplayError(MetadataRecordError):
    """A record is inconsistent with the image it is replayed onto (e.g. unknown topic id)."""
