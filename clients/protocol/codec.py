"""Request/response framing and the public encode/decode functions.

Frames here are the bytes after the 4-byte size prefix. Request headers are v1 (api key,
api version, correlation id, nullable client id) or v2 (v1 plus tagged fields) for flexible
API versions; response headers are v0 (correlation id) or v1 (plus tagged fields), except
that ApiVersions responses always use v0 so any client can read them.

Trailing bytes after a complete body are ignored, as Kafka's broker does: the frame size
already delimits the request, and newer clients may append fields an older schema lacks.

Decoded ``bytes`` and ``records`` fields are zero-copy ``memoryview`` slices of the frame.

Bodies: requests, and the responses of the APIs in
:data:`~clients.protocol.supported.TYPED_RESPONSES`, decode into the generated message classes
(:mod:`clients.protocol.messages`), other responses into dicts; ``typed=`` overrides that per
call. Encoding takes either form.
"""

from __future__ import annotations

import struct
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from clients.protocol.api_keys import ApiKey
from clients.protocol.messages import request_class, response_class
from clients.protocol.schemas import APIS
from clients.protocol.supported import SUPPORTED_VERSIONS, TYPED_RESPONSES
from clients.protocol.arrays import TooManyElements, element_bound
from clients.protocol.compiler import Compiled, compile_struct
from clients.protocol.exceptions import ProtocolError, UnsupportedVersionError
from clients.protocol.primitives import read_uvarint, string_reader, string_writer, value_size
from clients.protocol.schema import in_versions
from clients.varint import VarintError

_REQUEST_HEADER = struct.Struct(">hhi")
_CORRELATION_ID = struct.Struct(">i")
_read_client_id = string_reader(compact=False, nullable=True)
_write_client_id = string_writer(compact=False, nullable=True)

# What malformed input can make the primitive readers raise; all become ProtocolError.
_DECODE_ERRORS = (struct.error, IndexError, ValueError, VarintError, OverflowError, MemoryError)
_ENCODE_ERRORS = (struct.error, TypeError, ValueError, AttributeError, OverflowError)

_cache: dict[tuple[int, int, bool, bool], tuple[Compiled, bool]] = {}


@dataclass(frozen=True, slots=True)
class Request:
    """A decoded request: header fields and the body (a message class instance or a dict)."""

    api_key: ApiKey
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any
    header_version: int


def is_supported(api_key: int, api_version: int) -> bool:
    """Whether this codec has a schema for ``api_key`` at ``api_version``."""
    bounds = SUPPORTED_VERSIONS.get(api_key)  # type: ignore[call-overload]
    return bounds is not None and bounds[0] <= api_version <= bounds[1]


def is_typed(api_key: int, request: bool = True) -> bool:
    """Whether ``api_key``'s request (always) or response bodies decode into the generated
    message classes by default."""
    return request or api_key in TYPED_RESPONSES


def _compiled(
    api_key: int, api_version: int, request: bool, typed: bool | None = None
) -> tuple[Compiled, bool]:
    """The compiled body codec and whether the version is flexible (cached).

    ``typed``: the reader builds message class instances (by default as :func:`is_typed`
    says); every writer takes both forms.
    """
    if typed is None:
        typed = is_typed(api_key, request)
    cache_key = (api_key, api_version, request, typed)
    entry = _cache.get(cache_key)
    if entry is None:
        if not is_supported(api_key, api_version):
            raise ProtocolError(f"unsupported API {api_key} version {api_version}")
        api = APIS[ApiKey(api_key)]
        flexible = in_versions(api.flexible, api_version)
        fields = api.request if request else api.response
        target = None
        if typed:
            target = request_class(api_key) if request else response_class(api_key)
        entry = (compile_struct(fields, api_version, flexible, target, target), flexible)
        _cache[cache_key] = entry
    return entry


def request_header_version(api_key: int, api_version: int) -> int:
    """2 for flexible versions, else 1."""
    return 2 if _compiled(api_key, api_version, True)[1] else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """1 for flexible versions, else 0; always 0 for ApiVersions."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if _compiled(api_key, api_version, False)[1] else 0


def _skip_tagged(buf: memoryview, pos: int) -> int:
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise ProtocolError("header tagged field runs past the end of the frame")
    return pos


def decode_request(frame: bytes | bytearray | memoryview, typed: bool | None = None,
                   max_elements: int | None = None) -> Request:
    """Decode a request frame. Raises ProtocolError, or UnsupportedVersionError after the header.

    ``bytes``/``records`` values in the body are views into ``frame``: do not reuse a mutable
    receive buffer while the body is in use. ``typed``: decode the body into its message class
    (True) or a dict (False); by default as :func:`is_typed` says. ``max_elements``: refuse
    (TooManyElements, a ProtocolError) a body naming more array elements in all.
    """
    buf = memoryview(frame)
    try:
        api_key, api_version, correlation_id = _REQUEST_HEADER.unpack_from(buf, 0)
        client_id, pos = _read_client_id(buf, 8)
    except _DECODE_ERRORS as exc:
        raise ProtocolError(f"malformed request header: {exc}") from None
    if not is_supported(api_key, api_version):
        raise UnsupportedVersionError(api_key, api_version, correlation_id)
    if typed is None:
        typed = True
    codec, flexible = _compiled(api_key, api_version, True, typed)
    # Every element takes at least a byte: a shorter frame cannot pass the bound.
    bound = (element_bound(max_elements, str(max_elements))
             if max_elements is not None and len(buf) > max_elements else nullcontext())
    try:
        with bound:
            if flexible:
                pos = _skip_tagged(buf, pos)
            body, _ = codec.read(buf, pos)
    except TooManyElements as exc:
        name = ApiKey(api_key).name
        raise TooManyElements(f"{name} v{api_version} request names {exc}") from None
    except _DECODE_ERRORS as exc:
        name = ApiKey(api_key).name
        raise ProtocolError(f"malformed {name} v{api_version} request: {exc}") from None
    header_version = 2 if flexible else 1
    return Request(ApiKey(api_key), api_version, correlation_id, client_id, body, header_version)


def decode_response(
    api_key: int, api_version: int, frame: bytes | bytearray | memoryview,
    typed: bool | None = None,
) -> tuple[int, Any]:
    """Decode a response frame to (correlation id, body); ``typed`` as for decode_request."""
    if typed is None:
        typed = api_key in TYPED_RESPONSES
    codec, flexible = _compiled(api_key, api_version, False, typed)
    buf = memoryview(frame)
    try:
        (correlation_id,) = _CORRELATION_ID.unpack_from(buf, 0)
        pos = 4
        if flexible and api_key != ApiKey.API_VERSIONS:
            pos = _skip_tagged(buf, pos)
        body, _ = codec.read(buf, pos)
    except _DECODE_ERRORS as exc:
        name = ApiKey(api_key).name
        raise ProtocolError(f"malformed {name} v{api_version} response: {exc}") from None
    return correlation_id, body


def _encode_body(codec: Compiled, body: Any, out: bytearray, what: str) -> list:
    inserts: list = []
    try:
        codec.write(body, out, inserts)
    except ProtocolError as exc:
        raise ProtocolError(f"cannot encode {what}: {exc}") from None
    except _ENCODE_ERRORS as exc:
        raise ProtocolError(f"cannot encode {what}: {exc!r}") from None
    return inserts


def _join(out: bytearray, inserts: list) -> bytes:
    if not inserts:
        return bytes(out)
    view = memoryview(out)
    parts: list = []
    start = 0
    for offset, chunk in inserts:
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise ProtocolError("an opaque records chunk needs encode_response_chunks")
        parts.append(view[start:offset])
        parts.append(chunk)
        start = offset
    parts.append(view[start:])
    return b"".join(parts)


def encode_request(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: Any
) -> bytes:
    """Encode header and body (without the size prefix)."""
    codec, flexible = _compiled(api_key, api_version, True)
    out = bytearray(_REQUEST_HEADER.pack(api_key, api_version, correlation_id))
    _write_client_id(client_id, out, [])
    if flexible:
        out.append(0)
    inserts = _encode_body(codec, body, out, f"API {api_key} v{api_version} request")
    return _join(out, inserts)


def _response_buffer(
    api_key: int, api_version: int, correlation_id: int, body: Any
) -> tuple[bytearray, list]:
    codec, flexible = _compiled(api_key, api_version, False)
    out = bytearray(_CORRELATION_ID.pack(correlation_id))
    if flexible and api_key != ApiKey.API_VERSIONS:
        out.append(0)
    inserts = _encode_body(codec, body, out, f"API {api_key} v{api_version} response")
    return out, inserts


def encode_response(
    api_key: int, api_version: int, correlation_id: int, body: Any
) -> bytes:
    """Encode header and body (without the size prefix)."""
    return _join(*_response_buffer(api_key, api_version, correlation_id, body))


def encode_response_chunks(
    api_key: int, api_version: int, correlation_id: int, body: Any
) -> list[Any]:
    """Encode to a list of chunks for vectored or sendfile output (without the size prefix).

    ``records`` values may be opaque objects with a ``size`` attribute (e.g. a file range);
    they are returned in place, their size already counted in the enclosing lengths. Every
    other chunk is ``bytes`` or a ``memoryview`` of a caller's value.
    """
    out, inserts = _response_buffer(api_key, api_version, correlation_id, body)
    if not inserts:
        return [bytes(out)]
    view = memoryview(out)
    chunks: list[Any] = []
    start = 0
    for offset, chunk in inserts:
        if offset > start:
            chunks.append(bytes(view[start:offset]))
        chunks.append(chunk)
        start = offset
    if start < len(out):
        chunks.append(bytes(view[start:]))
    return chunks


def as_message(api_key: int, api_version: int, body: Any, request: bool = True) -> Any:
    """``body`` (a dict, or a message) as its generated message class at ``api_version``: what
    the typed reader makes of it on the wire, fields absent at that version at their defaults.
    For callers and tests that spell a body as a dict."""
    codec, _ = _compiled(api_key, api_version, request, False)
    out = bytearray()
    what = f"API {api_key} v{api_version} {'request' if request else 'response'}"
    data = _join(out, _encode_body(codec, body, out, what))
    typed_codec, _ = _compiled(api_key, api_version, request, True)
    message, _ = typed_codec.read(memoryview(data), 0)
    return message


def chunks_size(chunks: list[Any]) -> int:
    """Total byte size of ``encode_response_chunks`` output (for the size prefix)."""
    return sum(value_size(c) for c in chunks)
