"""Admin requests a broker forwards to the active controller (Kafka 2.8+ forwarding).

CreateTopics, DeleteTopics, CreatePartitions, IncrementalAlterConfigs and DescribeQuorum go
to the active controller through the broker's `ControllerChannel`; its answer is relayed
in the version the client asked for. Body dicts are version-neutral, so one translation is
needed: DeleteTopics before v6 names topics in `topic_names`, the controller's v6 in
`topics`. When no controller answers in time every entry gets REQUEST_TIMED_OUT.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from broker.controller_channel import ControllerChannel, ControllerUnavailableError
from broker.network.router import ConnectionContext, DecodedRequest, RequestRouter
from clients.protocol import ApiKey, ErrorCode
from clients.protocol.fit import fit_response
from metadata.records import ZERO_UUID

logger = logging.getLogger(__name__)

# Kafka's controller.socket.timeout.ms: the budget of a request without its own timeout.
DEFAULT_FORWARD_TIMEOUT_MS = 30_000
# A request's own timeout_ms bounds the controller's work; finding the controller and the
# round trip get at least this much on top of a short one.
MIN_FORWARD_TIMEOUT_MS = 5_000

FORWARDED_APIS = (ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS,
                  ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.DESCRIBE_QUORUM)


def forwarding_error_body(api_key: int, body: dict[str, Any], error_code: int,
                          message: str | None = None) -> dict[str, Any]:
    """The answer to a forwardable request that failed as a whole: `error_code` on every
    entry it names (or at top level for DescribeQuorum)."""
    entry: dict[str, Any] = {"error_code": error_code, "error_message": message}
    if api_key == ApiKey.CREATE_TOPICS:
        return {"throttle_time_ms": 0,
                "topics": [{"name": t["name"], **entry} for t in body.get("topics") or ()]}
    if api_key == ApiKey.DELETE_TOPICS:
        topics = _delete_targets(body)
        return {"throttle_time_ms": 0, "responses": [
            {"name": t["name"], "topic_id": t["topic_id"], **entry} for t in topics]}
    if api_key == ApiKey.CREATE_PARTITIONS:
        return {"throttle_time_ms": 0,
                "results": [{"name": t["name"], **entry} for t in body.get("topics") or ()]}
    if api_key == ApiKey.INCREMENTAL_ALTER_CONFIGS:
        return {"throttle_time_ms": 0, "responses": [
            {"resource_type": r["resource_type"], "resource_name": r["resource_name"], **entry}
            for r in body.get("resources") or ()]}
    return {"error_code": error_code, "error_message": message}


def _error_body_builder(api_key: int) -> Callable[[DecodedRequest | None, int], dict]:
    def build(request: DecodedRequest | None, error_code: int) -> dict:
        return forwarding_error_body(api_key, {} if request is None else request.body,
                                     error_code)

    return build


def _delete_targets(body: dict[str, Any]) -> list[dict[str, Any]]:
    topics = [{"name": t.get("name"), "topic_id": t.get("topic_id") or ZERO_UUID}
              for t in body.get("topics") or ()]
    topics.extend({"name": name, "topic_id": ZERO_UUID} for name in body.get("topic_names") or ())
    return topics


class ForwardingHandlers:
    """Relays forwardable admin requests to the active controller."""

    def __init__(self, channel: ControllerChannel, *,
                 min_timeout_ms: int = MIN_FORWARD_TIMEOUT_MS) -> None:
        self._channel = channel
        self._min_timeout_ms = min_timeout_ms

    def register(self, router: RequestRouter) -> None:
        for api_key in FORWARDED_APIS:
            router.register(api_key, self.forward, _error_body_builder(api_key))

    async def forward(self, request: DecodedRequest, ctx: ConnectionContext) -> dict:
        api_key, version = request.api_key, request.api_version
        body = dict(request.body)
        if api_key == ApiKey.DELETE_TOPICS:
            body["topics"] = _delete_targets(body)
            body.pop("topic_names", None)
        requested_timeout = body.get("timeout_ms")
        if requested_timeout is None:
            timeout_ms = DEFAULT_FORWARD_TIMEOUT_MS
        else:
            timeout_ms = max(int(requested_timeout), 0) + self._min_timeout_ms
        try:
            response = await self._channel.send(api_key, body, timeout_ms)
        except ControllerUnavailableError as exc:
            logger.warning("forwarding %s from %s:%d: %s", ApiKey(api_key).name,
                           ctx.peer[0], ctx.peer[1], exc)
            return forwarding_error_body(api_key, request.body, ErrorCode.REQUEST_TIMED_OUT,
                                         "No active controller answered in time.")
        return fit_response(api_key, version, response)
