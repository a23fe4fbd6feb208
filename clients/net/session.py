"""The I/O-free half of a Kafka-protocol client connection.

`ProtocolSession` builds size-prefixed request frames, assigns correlation ids, negotiates
API versions from an ApiVersions answer and decodes responses. `FrameBuffer` splits a byte
stream into response frames. The trio and the blocking connections only move bytes.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version as package_version
from typing import Any, Mapping

from clients.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    ErrorCode,
    KafkaError,
    ProtocolError,
    api_name,
    decode_response,
    encode_request,
)
from clients.protocol.message import Message
from clients.protocol.messages.api_versions import ApiVersionsRequestData, ApiVersionsResponseData

# ApiVersions v3 is the newest this codec speaks; older brokers answer it with a v0 body.
API_VERSIONS_REQUEST_VERSION = 3
CLIENT_SOFTWARE_NAME = "raftka"

_SIZE = struct.Struct(">i")
_ERROR_CODE = struct.Struct(">h")
_MAX_CORRELATION_ID = 2**31 - 1
# Brokers reject ApiVersions whose software name/version do not match Kafka's pattern.
_SOFTWARE_INVALID_CHARS = re.compile(r"[^a-zA-Z0-9.\-]")


@lru_cache(maxsize=1)
def client_software_version() -> str:
    """The installed raftka version, made acceptable to a broker's ApiVersions validation."""
    try:
        raw = package_version("raftka")
    except PackageNotFoundError:
        return "unknown"
    cleaned = _SOFTWARE_INVALID_CHARS.sub("-", raw).strip("-.")
    return cleaned or "unknown"


@dataclass(frozen=True, slots=True)
class OutgoingRequest:
    """One encoded request: ``data`` is the whole frame including its 4-byte size prefix."""

    api_key: ApiKey
    api_version: int
    correlation_id: int
    data: bytes
    expects_response: bool


class FrameBuffer:
    """Accumulates received bytes and yields complete frames without their size prefix."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        self._buffer += data

    def peek(self, size: int = 8) -> bytes:
        """The first ``size`` bytes buffered (fewer if fewer arrived)."""
        return bytes(self._buffer[:size])

    def bytes_wanted(self) -> int:
        """How many more bytes complete the next frame (0 when one is already complete)."""
        have = len(self._buffer)
        if have < 4:
            return 4 - have
        size = _SIZE.unpack_from(self._buffer, 0)[0]
        return max(4 + max(size, 0) - have, 0)

    def detach_frame(self, min_size: int) -> tuple[bytearray, int] | None:
        """For a frame of at least `min_size` bytes whose size prefix arrived but not all of
        it: a buffer of the frame's size holding the bytes received so far, and how many
        those are; they leave this buffer, which must be empty then (nothing can follow an
        incomplete frame). The caller receives the rest straight into it: large frames are
        then copied once, from the socket. None otherwise.

        Raises ProtocolError for a negative size prefix.
        """
        have = len(self._buffer) - 4
        if have < 0:
            return None
        size = _SIZE.unpack_from(self._buffer, 0)[0]
        if size < 0:
            raise ProtocolError(f"negative response frame size {size}")
        if size < min_size or have >= size:
            return None
        frame = bytearray(size)
        frame[:have] = self._buffer[4:]
        self._buffer.clear()
        return frame, have

    def next_frame(self) -> bytes | None:
        """The next complete frame, or None if more bytes are needed.

        Raises ProtocolError for a negative size prefix.
        """
        if len(self._buffer) < 4:
            return None
        size = _SIZE.unpack_from(self._buffer, 0)[0]
        if size < 0:
            raise ProtocolError(f"negative response frame size {size}")
        end = 4 + size
        if len(self._buffer) < end:
            return None
        frame = bytes(memoryview(self._buffer)[4:end])
        del self._buffer[:end]
        return frame


class ProtocolSession:
    """Correlation ids, version negotiation and response decoding for one connection."""

    def __init__(self, client_id: str | None) -> None:
        self.client_id = client_id
        self._next_correlation_id = 0
        self._broker_versions: dict[int, tuple[int, int]] | None = None

    @property
    def negotiated(self) -> bool:
        return self._broker_versions is not None

    @property
    def broker_versions(self) -> Mapping[int, tuple[int, int]]:
        """The broker's (min, max) version per API key from ApiVersions; empty before it."""
        return dict(self._broker_versions or {})

    def version_range(self, api_key: int) -> tuple[int, int] | None:
        """The versions of ``api_key`` both sides support, or None if there are none."""
        ours = SUPPORTED_VERSIONS.get(api_key)  # type: ignore[call-overload]
        theirs = (self._broker_versions or {}).get(api_key)
        if ours is None or theirs is None:
            return None
        low, high = max(ours[0], theirs[0]), min(ours[1], theirs[1])
        return (low, high) if low <= high else None

    def supports(self, api_key: int) -> bool:
        return self.version_range(api_key) is not None

    def pick_version(self, api_key: int, version: int | None = None) -> int:
        """The highest common version, or ``version`` if both sides support it.

        Raises KafkaError(UNSUPPORTED_VERSION) otherwise, as Kafka's client does.
        """
        common = self.version_range(api_key)
        name = api_name(api_key)
        if common is None:
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION,
                             f"{name} is not supported by both this client and the broker")
        if version is None:
            return common[1]
        if not common[0] <= version <= common[1]:
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION,
                             f"{name} v{version} is outside the common versions "
                             f"{common[0]}-{common[1]}")
        return version

    def _correlation_id(self) -> int:
        correlation_id = self._next_correlation_id
        self._next_correlation_id = (correlation_id + 1) % (_MAX_CORRELATION_ID + 1)
        return correlation_id

    def _encode(self, api_key: int, api_version: int, body: dict[str, Any] | Message,
                expects_response: bool) -> OutgoingRequest:
        correlation_id = self._correlation_id()
        frame = encode_request(api_key, api_version, correlation_id, self.client_id, body)
        return OutgoingRequest(ApiKey(api_key), api_version, correlation_id,
                               _SIZE.pack(len(frame)) + frame, expects_response)

    def api_versions_request(self) -> OutgoingRequest:
        """The ApiVersions request that opens every connection."""
        body = ApiVersionsRequestData(client_software_name=CLIENT_SOFTWARE_NAME,
                                      client_software_version=client_software_version())
        return self._encode(ApiKey.API_VERSIONS, API_VERSIONS_REQUEST_VERSION, body, True)

    def apply_api_versions(self, request: OutgoingRequest,
                           frame: bytes) -> ApiVersionsResponseData:
        """Record the broker's versions from the answer to ``api_versions_request``.

        A broker that does not know our ApiVersions version answers UNSUPPORTED_VERSION
        with a v0 body listing its versions; those are used. Any other error raises
        KafkaError.
        """
        try:
            (error_code,) = _ERROR_CODE.unpack_from(frame, 4)
        except struct.error:
            raise ProtocolError("truncated ApiVersions response") from None
        if error_code == ErrorCode.UNSUPPORTED_VERSION:
            correlation_id, body = decode_response(ApiKey.API_VERSIONS, 0, frame)
        else:
            correlation_id, body = decode_response(ApiKey.API_VERSIONS, request.api_version,
                                                   frame)
        _check_correlation(request, correlation_id)
        if error_code not in (ErrorCode.NONE, ErrorCode.UNSUPPORTED_VERSION):
            raise KafkaError(error_code, "ApiVersions failed")
        versions = {entry.api_key: (entry.min_version, entry.max_version)
                    for entry in body.api_keys}
        if not versions:
            raise KafkaError(error_code, "ApiVersions listed no APIs")
        self._broker_versions = versions
        return body

    def build_request(self, api_key: int, body: dict[str, Any],
                      version: int | None = None) -> OutgoingRequest:
        """Encode ``body`` at the negotiated (or the given) version under a new correlation id.

        Produce with ``acks == 0`` expects no response, as in Kafka.
        """
        api_version = self.pick_version(api_key, version)
        expects_response = not (api_key == ApiKey.PRODUCE and body.get("acks") == 0)
        return self._encode(api_key, api_version, body, expects_response)

    def parse_response(self, request: OutgoingRequest, frame: bytes) -> dict[str, Any]:
        """Decode the response to ``request``; ProtocolError if it is not that response."""
        correlation_id, body = decode_response(request.api_key, request.api_version, frame)
        _check_correlation(request, correlation_id)
        return body


def _check_correlation(request: OutgoingRequest, correlation_id: int) -> None:
    if correlation_id != request.correlation_id:
        raise ProtocolError(
            f"response correlation id {correlation_id} does not match request "
            f"{request.correlation_id} ({request.api_key.name})")
