"""The wire codec the server needs (structurally `clients.protocol`), injectable for tests."""

from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence

from broker.apis.request import DecodedRequest


class WireCodec(Protocol):
    """The parts of `clients.protocol` the server uses; the module itself satisfies it."""

    SUPPORTED_VERSIONS: Mapping[Any, tuple[int, int]]
    ProtocolError: type[Exception]
    UnsupportedVersionError: type[Exception]

    def decode_request(self, frame: bytes | memoryview, typed: bool | None = None,
                       max_elements: int | None = None) -> DecodedRequest: ...

    def encode_response_chunks(self, api_key: int, api_version: int, correlation_id: int,
                               body: dict) -> Sequence[object]: ...


def default_codec() -> WireCodec:
    """`clients.protocol`, imported on first use."""
    import clients.protocol as codec

    return codec  # type: ignore[return-value]
