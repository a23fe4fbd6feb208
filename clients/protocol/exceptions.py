"""Exceptions raised by the protocol codec."""

from __future__ import annotations


class ProtocolError(Exception):
    """A frame cannot be decoded, or a value cannot be encoded, under the Kafka protocol.

    This is the only exception type that decoding bad input raises.
    """


class UnsupportedVersionError(ProtocolError):
    """The request header names an API or version this codec does not support.

    Raised after the header was parsed, so the server can still answer
    UNSUPPORTED_VERSION under the request's correlation id.
    """

    def __init__(self, api_key: int, api_version: int, correlation_id: int) -> None:
        super().__init__(f"unsupported API {api_key} version {api_version}")
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
