"""The Kafka wire protocol codec: schemas, headers and framing for every supported API.

Typical use::

    request = decode_request(frame)          # frame: bytes after the 4-byte size prefix
    payload = encode_response(request.api_key, request.api_version,
                              request.correlation_id, {"error_code": 0, ...})

Schemas come from Kafka's definitions (``definitions/``, built by ``schemas``); the advertised
APIs and versions are ``supported``; ``messages`` holds the classes generated from the same
definitions, which every request (and the responses of the APIs in ``TYPED_RESPONSES``)
decodes into.
"""

from clients.protocol.api_keys import ApiKey, api_name
from clients.protocol.schemas import APIS
from clients.protocol.supported import SUPPORTED_VERSIONS, TYPED_RESPONSES
from clients.protocol.codec import (
    Request,
    as_message,
    chunks_size,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    encode_response_chunks,
    is_supported,
    is_typed,
    request_header_version,
    response_header_version,
)
from clients.protocol.errors import ErrorCode, KafkaError
from clients.protocol.exceptions import ProtocolError, UnsupportedVersionError
from clients.protocol.primitives import ZERO_UUID

__all__ = [
    "APIS",
    "ApiKey",
    "ErrorCode",
    "KafkaError",
    "ProtocolError",
    "Request",
    "SUPPORTED_VERSIONS",
    "TYPED_RESPONSES",
    "UnsupportedVersionError",
    "ZERO_UUID",
    "api_name",
    "as_message",
    "chunks_size",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "encode_response_chunks",
    "is_supported",
    "is_typed",
    "request_header_version",
    "response_header_version",
]
