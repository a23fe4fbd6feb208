"""The Kafka wire protocol codec: schemas, headers and framing for every supported API.

Typical use::

    request = decode_request(frame)          # frame: bytes after the 4-byte size prefix
    payload = encode_response(request.api_key, request.api_version,
                              request.correlation_id, {"error_code": 0, ...})
"""

from clients.protocol.api_keys import ApiKey, api_name
from clients.protocol.apis import APIS, SUPPORTED_VERSIONS
from clients.protocol.codec import (
    Request,
    chunks_size,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    encode_response_chunks,
    is_supported,
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
    "UnsupportedVersionError",
    "ZERO_UUID",
    "api_name",
    "chunks_size",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "encode_response_chunks",
    "is_supported",
    "request_header_version",
    "response_header_version",
]
