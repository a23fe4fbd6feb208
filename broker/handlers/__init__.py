"""Request handlers of the broker listeners for the metadata-side APIs."""

from __future__ import annotations

from typing import Callable

from broker.controller_channel import ControllerChannel
from broker.handlers.forwarding import FORWARDED_APIS, ForwardingHandlers, forwarding_error_body
from broker.handlers.metadata import AutoCreateTopics, MetadataHandlers
from broker.network.api_versions import install_api_versions
from broker.network.router import RequestRouter
from metadata.image import MetadataImage

__all__ = [
    "FORWARDED_APIS",
    "AutoCreateTopics",
    "ForwardingHandlers",
    "MetadataHandlers",
    "forwarding_error_body",
    "install_broker_handlers",
]


def install_broker_handlers(router: RequestRouter, *, image: Callable[[], MetadataImage],
                            cluster_id: str, channel: ControllerChannel,
                            auto_create: AutoCreateTopics | None = None) -> None:
    """ApiVersions, Metadata, DescribeCluster and the forwarded admin APIs on `router`."""
    install_api_versions(router)
    MetadataHandlers(image, cluster_id, auto_create=auto_create).register(router)
    ForwardingHandlers(channel).register(router)
