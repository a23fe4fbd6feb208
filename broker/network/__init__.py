"""The Kafka-protocol network layer: listeners, framing, ordered pipelining, dispatch."""

from broker.network.api_versions import (
    api_versions_body,
    install_api_versions,
    make_api_versions_handler,
)
from broker.network.codec import WireCodec, default_codec
from broker.network.framing import FrameError, FrameReader
from broker.network.router import (
    CloseConnection,
    ConnectionContext,
    DecodedRequest,
    Handler,
    RequestRouter,
    default_error_body,
)
from broker.network.server import NetworkServer, ServerSettings
from broker.network.transport import FileRange, write_response

__all__ = [
    "CloseConnection",
    "ConnectionContext",
    "DecodedRequest",
    "FileRange",
    "FrameError",
    "FrameReader",
    "Handler",
    "NetworkServer",
    "RequestRouter",
    "ServerSettings",
    "WireCodec",
    "api_versions_body",
    "default_codec",
    "default_error_body",
    "install_api_versions",
    "make_api_versions_handler",
    "write_response",
]
