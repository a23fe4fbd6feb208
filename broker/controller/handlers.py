"""The CONTROLLER listener's request handlers: each RPC handed to its pure decision."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from broker.controller.responses import error_response
from broker.network import (ConnectionContext, DecodedRequest, Handler, RequestRouter,
                            install_api_versions)
from clients.protocol import ApiKey
from metadata.controller import Decision
from metadata.controller.alter_partition import alter_partition
from metadata.controller.brokers import broker_heartbeat, register_broker
from metadata.controller.configs import incremental_alter_configs
from metadata.controller.partitions import create_partitions
from metadata.controller.producer_ids import allocate_producer_ids
from metadata.controller.topics import create_topics, delete_topics
from metadata.image import MetadataImage

if TYPE_CHECKING:
    from broker.controller.service import QuorumController

# request body -> (image, now_ms) -> decision
DecisionFor = Callable[[dict[str, Any]], Callable[[MetadataImage, int], Decision]]


def decisions(controller: "QuorumController") -> dict[ApiKey, DecisionFor]:
    """The pure decision behind each mutating controller RPC, bound to `controller`'s state."""
    c = controller
    return {
        ApiKey.BROKER_REGISTRATION: lambda body: lambda image, now: register_broker(
            image, body, now, c.tracker, c.settings),
        ApiKey.BROKER_HEARTBEAT: lambda body: lambda image, now: broker_heartbeat(
            image, body, now, c.tracker, c.settings),
        ApiKey.ALTER_PARTITION: lambda body: lambda image, now: alter_partition(image, body, now),
        ApiKey.CREATE_TOPICS: lambda body: lambda image, now: create_topics(
            image, body, now, rng=c.rng, settings=c.settings),
        ApiKey.DELETE_TOPICS: lambda body: lambda image, now: delete_topics(
            image, body, now, settings=c.settings),
        ApiKey.CREATE_PARTITIONS: lambda body: lambda image, now: create_partitions(
            image, body, now, rng=c.rng),
        ApiKey.INCREMENTAL_ALTER_CONFIGS: lambda body: lambda image, now: incremental_alter_configs(
            image, body, now, settings=c.settings),
        ApiKey.ALLOCATE_PRODUCER_IDS: lambda body: lambda image, now: allocate_producer_ids(
            image, body, now, settings=c.settings),
    }


def install_handlers(router: RequestRouter, controller: "QuorumController") -> None:
    """Register Kafka's CONTROLLER listener API set on `router`."""
    for api_key, decision_for in decisions(controller).items():
        router.register(api_key, _mutating_handler(controller, api_key, decision_for),
                        error_body=_error_body(api_key))

    async def handle_describe_quorum(request: DecodedRequest, ctx: ConnectionContext) -> dict:
        return controller.describe_quorum(request.body, request.api_version)

    async def handle_describe_cluster(request: DecodedRequest, ctx: ConnectionContext) -> dict:
        return controller.describe_cluster(request.body, request.api_version)

    router.register(ApiKey.DESCRIBE_QUORUM, handle_describe_quorum)
    router.register(ApiKey.DESCRIBE_CLUSTER, handle_describe_cluster)
    install_api_versions(router)


def _mutating_handler(controller: "QuorumController", api_key: ApiKey, decision_for: DecisionFor) -> Handler:
    async def handle(request: DecodedRequest, ctx: ConnectionContext) -> dict:
        return await controller.submit(api_key, request.body, decision_for(request.body))

    handle.__name__ = f"handle_{api_key.name.lower()}"
    return handle


def _error_body(api_key: ApiKey) -> Callable[[DecodedRequest | None, int], dict]:
    def build(request: DecodedRequest | None, code: int) -> dict:
        return error_response(api_key, request.body if request is not None else None, code)

    return build
