"""A stand-in node: the network server answering ApiVersions only.

`raftka server start` runs it while `broker.node.node_main` does not exist, so the launcher
and CLI can be exercised end to end before the full node is wired."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from broker.network.api_versions import install_api_versions
from broker.network.router import RequestRouter
from broker.network.server import NetworkServer, ServerSettings

if TYPE_CHECKING:
    from broker.config import ServerConfig

logger = logging.getLogger(__name__)


async def minimal_node_main(config: "ServerConfig", shutdown: trio.Event) -> None:
    """Serve every configured listener until `shutdown` is set, then stop gracefully."""
    router = RequestRouter()
    install_api_versions(router)
    server = NetworkServer(config.listeners, router, ServerSettings.from_config(config))
    async with trio.open_nursery() as nursery:
        addresses = await nursery.start(server.serve)
        logger.info("minimal node %d serving ApiVersions on %s", config.node_id,
                    ", ".join(f"{name}={host}:{port}" for name, (host, port)
                              in addresses.items()))
        await shutdown.wait()
        server.stop()
