"""The Kafka-protocol network layer: listeners, framing, ordered pipelining; each request goes
to the request layer's router (`broker.apis`)."""

from broker.network.codec import WireCodec, default_codec
from broker.network.framing import FrameError, FrameReader
from broker.network.server import NetworkServer
from broker.network.settings import ServerSettings
from broker.network.transport import write_response

__all__ = [
    "FrameError",
    "FrameReader",
    "NetworkServer",
    "ServerSettings",
    "WireCodec",
    "default_codec",
    "write_response",
]
