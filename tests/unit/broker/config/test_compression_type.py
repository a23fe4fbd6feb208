"""What compression.type asks for: the codec batches become, and a codec this process lacks."""

from __future__ import annotations

import pytest

from broker.config import compression_type
from broker.config.compression_type import codec_problem, target_codec
from clients.records.compression import GZIP, LZ4, NONE, ZSTD


def test_producer_keeps_the_codec_and_uncompressed_means_none() -> None:
    assert target_codec("producer") is None
    assert target_codec("uncompressed") == NONE
    assert (target_codec("gzip"), target_codec("lz4"), target_codec("zstd")) == (GZIP, LZ4, ZSTD)


def test_a_codec_this_process_cannot_write_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compression_type, "unavailable_reason",
                        lambda codec: "zstandard is not installed" if codec == ZSTD else None)
    assert codec_problem("zstd") == (
        "compression.type zstd is not supported by this broker: zstandard is not installed")
    assert codec_problem("gzip") is None
    assert codec_problem("producer") is None
    assert codec_problem("no-such-codec") is None  # the topic config rules refuse that one
