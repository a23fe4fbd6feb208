"""The request layer: one context per request, one authorization hook every request passes,
and each API's error body defined once (forwarding and the controller listener share it)."""

from __future__ import annotations

from typing import Any

from broker.apis.admin import FORWARDED_ERRORS
from broker.apis.broker_apis import install_broker_apis
from broker.apis.request import (
    ANONYMOUS_PRINCIPAL,
    ConnectionContext,
    DecodedRequest,
    RequestContext,
    RequestRouter,
)
from broker.controller_server.quorum_controller import CONTROLLER_ERRORS
from clients.protocol import SUPPORTED_VERSIONS, ApiKey, ErrorCode, decode_request, encode_request
from tests.unit.broker.apis.harness import broker_config

CONNECTION = ConnectionContext(7, "PLAINTEXT", "PLAINTEXT", ("127.0.0.1", 40000))


def decoded(api_key: int, body: dict[str, Any], version: int | None = None,
            client_id: str = "the-client") -> DecodedRequest:
    version = SUPPORTED_VERSIONS[api_key][1] if version is None else version
    return decode_request(encode_request(api_key, version, 1, client_id, body))  # type: ignore[no-any-return]


class Recording:
    """An authorizer that records what it saw and refuses with `code`."""

    def __init__(self, code: int = ErrorCode.NONE) -> None:
        self.code = code
        self.seen: list[tuple[int, RequestContext]] = []

    def authorize(self, request: DecodedRequest, ctx: RequestContext) -> int:
        self.seen.append((request.api_key, ctx))
        return self.code


async def test_handlers_receive_one_request_context() -> None:
    seen: list[RequestContext] = []

    async def handler(request: DecodedRequest, ctx: RequestContext) -> dict:
        seen.append(ctx)
        ctx.scratch["calls"] = ctx.scratch.get("calls", 0) + 1
        return {"error_code": 0, "groups": []}

    router = RequestRouter()
    router.register(ApiKey.LIST_GROUPS, handler)
    await router.dispatch(decoded(ApiKey.LIST_GROUPS, {}, 3), CONNECTION)
    await router.dispatch(decoded(ApiKey.LIST_GROUPS, {}, 4), CONNECTION)
    first, second = seen
    assert (first.listener_name, first.security_protocol, first.principal, first.client_id,
            first.api_version, first.peer) == ("PLAINTEXT", "PLAINTEXT", ANONYMOUS_PRINCIPAL,
                                               "the-client", 3, ("127.0.0.1", 40000))
    assert second.api_version == 4
    assert CONNECTION.scratch["calls"] == 2  # the connection's scratch state, shared


async def test_every_request_passes_the_authorization_hook_and_a_refusal_gets_the_error_body(
        tmp_path) -> None:
    refusing = Recording(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    router = RequestRouter(refusing)
    called: list[int] = []

    async def produce(request: DecodedRequest, ctx: RequestContext) -> dict:
        called.append(request.api_key)
        return {}

    from broker.apis.produce import produce_error_body

    router.register(ApiKey.PRODUCE, produce, produce_error_body)
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 100, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": None},
                                         {"index": 1, "records": None}]}]}
    answer = await router.dispatch(decoded(ApiKey.PRODUCE, body), CONNECTION)
    assert called == []
    assert [p.error_code for p in answer.responses[0].partition_responses] == [
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED] * 2
    assert [key for key, _ in refusing.seen] == [ApiKey.PRODUCE]
    assert refusing.seen[0][1].principal == ANONYMOUS_PRINCIPAL


async def test_the_default_hook_allows_everything() -> None:
    router = RequestRouter()

    async def heartbeat(request: DecodedRequest, ctx: RequestContext) -> dict:
        return {"throttle_time_ms": 0, "error_code": 0}

    router.register(ApiKey.HEARTBEAT, heartbeat)
    answer = await router.dispatch(decoded(ApiKey.HEARTBEAT, {
        "group_id": "g", "generation_id": 1, "member_id": "m"}), CONNECTION)
    assert answer == {"throttle_time_ms": 0, "error_code": 0}


def test_a_registration_without_an_error_body_never_keeps_an_older_one() -> None:
    router = RequestRouter()

    async def handler(request: DecodedRequest, ctx: RequestContext) -> dict:
        return {}

    router.register(ApiKey.LIST_GROUPS, handler,
                    lambda body, version, code, message=None: {"special": code})
    router.register(ApiKey.LIST_GROUPS, handler)
    assert router.error_body(ApiKey.LIST_GROUPS, None, 15) == {"error_code": 15}


def test_forwarding_and_the_controller_listener_share_each_admin_error_body() -> None:
    for api_key in (ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS,
                    ApiKey.INCREMENTAL_ALTER_CONFIGS):
        assert FORWARDED_ERRORS[api_key] is CONTROLLER_ERRORS[api_key]


def test_the_controller_listener_answers_failures_with_the_request_layers_bodies() -> None:
    from broker.apis.metadata import describe_cluster_error
    from broker.controller_server import QuorumController
    from kraft.metadata_state_machine import MetadataStateMachine
    from metadata.settings import ControllerSettings

    controller = QuorumController(1, None, MetadataStateMachine(),  # type: ignore[arg-type]
                                  ControllerSettings(), cluster_id="c")
    router = RequestRouter()
    controller.register(router)
    body = {"topics": [{"name": "a"}], "resources": [], "topic_names": ["b"]}
    for api_key in (*CONTROLLER_ERRORS, ApiKey.DESCRIBE_QUORUM, ApiKey.DESCRIBE_CLUSTER):
        expected = ({**FORWARDED_ERRORS, **CONTROLLER_ERRORS}.get(api_key)
                    or describe_cluster_error)
        request = decoded(api_key, body if api_key in FORWARDED_ERRORS else {})
        assert router.error_body(api_key, request, ErrorCode.NOT_CONTROLLER) == expected(
            request.body, request.api_version, ErrorCode.NOT_CONTROLLER), ApiKey(api_key).name


def test_every_broker_api_has_its_own_error_body(tmp_path) -> None:
    """Every API the broker routes answers a failure in its own shape: the error code lands
    where that API's clients read it, never only as a stray top-level field."""
    from broker.group.coordinator import GroupCoordinator
    from broker.group.model import GroupCoordinatorSettings
    from broker.group.routing import offsets_topic_settings
    from broker.coordinator.topic import InternalTopicCreator
    from broker.log.manager import LogManager
    from broker.replica.manager import ReplicaManager
    from metadata.image import MetadataImage

    config = broker_config(tmp_path)
    logs = LogManager([tmp_path], config.log_defaults())
    try:
        replicas = ReplicaManager(1, logs, config.log_defaults())
        groups = GroupCoordinator(1, GroupCoordinatorSettings.from_config(config),
                                  None,  # type: ignore[arg-type]
                                  image=MetadataImage.empty,
                                  topic_creator=InternalTopicCreator(
                                      offsets_topic_settings(config), None))
        router = RequestRouter()
        install_broker_apis(router, config, "c", MetadataImage.empty, replicas=replicas,
                            groups=groups, producer_ids=object(),  # type: ignore[arg-type]
                            controller=object())  # type: ignore[arg-type]
        # Each routed API has an advertised range (clients/protocol/supported.py).
        assert router.api_keys() <= set(SUPPORTED_VERSIONS)
        for api_key in router.api_keys() - {ApiKey.API_VERSIONS}:
            body = router.error_body(api_key, None, ErrorCode.NOT_COORDINATOR)
            assert body != {"error_code": ErrorCode.NOT_COORDINATOR}, ApiKey(api_key).name
    finally:
        logs.close()
