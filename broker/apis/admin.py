"""The admin APIs a broker forwards to the active controller (Kafka 2.8+ forwarding), and
their error answers, which the controller's own listener uses too.

CreateTopics, DeleteTopics, CreatePartitions, (Incremental)AlterConfigs, the ACL, SCRAM,
quota and reassignment mutations, ElectLeaders and DescribeQuorum go to the active
controller through the broker's `ControllerClient`; its answer is relayed in the version the
client asked for. One translation is needed: DeleteTopics before v6
names topics in `topic_names`, the controller's v6 in `topics`. When no controller answers
in time every entry gets REQUEST_TIMED_OUT.

Kafka puts a request-wide error per entry where the response has no top-level error code:
per topic for CreateTopics, DeleteTopics and CreatePartitions, per resource for
IncrementalAlterConfigs; at top level for DescribeQuorum. The error answers of the APIs the
controller decides are defined with their decisions (metadata.controller), once.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from broker.apis.acls import ACL_MUTATION_ERRORS
from broker.apis.admin_authorization import split_for_forwarding
from broker.apis.authorization import ALLOW_ALL, Authorization
from broker.apis.reassignments import REASSIGNMENT_ERRORS
from broker.apis.request import DecodedRequest, ErrorBody, RequestContext, RequestRouter
from broker.controller_client import ControllerClient, ControllerUnavailableError
from clients.protocol import ApiKey, ErrorCode
from clients.protocol.fit import fit_response
from clients.protocol.messages import response_class
from clients.protocol.messages.delete_topics import DeleteTopicsRequestData
from clients.protocol.messages.describe_quorum import (
    DescribeQuorumRequestData,
    DescribeQuorumResponseData,
)
from clients.protocol.messages.unregister_broker import (
    UnregisterBrokerRequestData,
    UnregisterBrokerResponseData,
)
from metadata.controller.client_quotas import alter_client_quotas_error
from metadata.controller.configs import alter_configs_error, incremental_alter_configs_error
from metadata.controller.leader_election import elect_leaders_error
from metadata.controller.partitions import create_partitions_error
from metadata.controller.scram import alter_user_scram_credentials_error
from metadata.controller.topics import create_topics_error, delete_targets, delete_topics_error
from metadata.image import MetadataImage

logger = logging.getLogger(__name__)

# Kafka's controller.socket.timeout.ms: the budget of a request without its own timeout.
DEFAULT_FORWARD_TIMEOUT_MS = 30_000
# A request's own timeout_ms bounds the controller's work; finding the controller and the
# round trip get at least this much on top of a short one.
MIN_FORWARD_TIMEOUT_MS = 5_000


def _message(code: int, message: str | None) -> str:
    return message if message is not None else ErrorCode.from_code(code).message


def unregister_broker_error(body: UnregisterBrokerRequestData, version: int, code: int,
                            message: str | None = None) -> UnregisterBrokerResponseData:
    return UnregisterBrokerResponseData(error_code=code, error_message=_message(code, message))


def describe_quorum_error(body: DescribeQuorumRequestData, version: int, code: int,
                          message: str | None = None) -> DescribeQuorumResponseData:
    return DescribeQuorumResponseData(error_code=code, error_message=message)


ADMIN_ERRORS: dict[int, ErrorBody] = {
    ApiKey.CREATE_TOPICS: create_topics_error,
    ApiKey.DELETE_TOPICS: delete_topics_error,
    ApiKey.CREATE_PARTITIONS: create_partitions_error,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: incremental_alter_configs_error,
    ApiKey.ALTER_CONFIGS: alter_configs_error,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: alter_user_scram_credentials_error,
    ApiKey.ELECT_LEADERS: elect_leaders_error,
    ApiKey.UNREGISTER_BROKER: unregister_broker_error,
    **REASSIGNMENT_ERRORS,
    ApiKey.ALTER_CLIENT_QUOTAS: alter_client_quotas_error,
}
FORWARDED_ERRORS: dict[int, ErrorBody] = {**ADMIN_ERRORS,
                                          ApiKey.DESCRIBE_QUORUM: describe_quorum_error}
FORWARDED_APIS = tuple(FORWARDED_ERRORS)
# Every API `ForwardingHandlers.forward` relays (the ACL APIs are registered by AclHandlers).
_RELAYED_ERRORS: dict[int, ErrorBody] = {**FORWARDED_ERRORS, **ACL_MUTATION_ERRORS}


class ForwardingHandlers:
    """Relays forwardable admin requests to the active controller."""

    def __init__(self, controller: ControllerClient, *,
                 min_timeout_ms: int = MIN_FORWARD_TIMEOUT_MS,
                 authz: Authorization = ALLOW_ALL,
                 image: Callable[[], MetadataImage] = MetadataImage.empty) -> None:
        self._controller = controller
        self._min_timeout_ms = min_timeout_ms
        self._authz = authz
        self._image = image

    def register(self, router: RequestRouter) -> None:
        for api_key, error_body in FORWARDED_ERRORS.items():
            router.register(api_key, self.forward, error_body)

    async def forward(self, request: DecodedRequest, ctx: RequestContext) -> Any:
        api_key, version = request.api_key, request.api_version
        body = request.body
        if api_key == ApiKey.DELETE_TOPICS:
            body = DeleteTopicsRequestData(topics=delete_targets(body), timeout_ms=body.timeout_ms)
        split = split_for_forwarding(api_key, body, ctx, self._authz, self._image)
        if split.body is None:
            return response_class(api_key)(**{split.results_key: split.refused})
        body = split.body
        requested_timeout = _timeout_ms(body)
        if requested_timeout is None:
            timeout_ms = DEFAULT_FORWARD_TIMEOUT_MS
        else:
            timeout_ms = max(int(requested_timeout), 0) + self._min_timeout_ms
        try:
            response = await self._controller.send(api_key, body, timeout_ms)
        except ControllerUnavailableError as exc:
            logger.warning("forwarding %s from %s:%d: %s", ApiKey(api_key).name,
                           ctx.peer[0], ctx.peer[1], exc)
            return _RELAYED_ERRORS[api_key](request.body, version, ErrorCode.REQUEST_TIMED_OUT,
                                            "No active controller answered in time.")
        response = fit_response(api_key, version, response)
        if split.refused:
            answered = list(response.get(split.results_key) or ())
            # The relayed entries are dicts, the refused ones messages: the encoder takes both.
            response[split.results_key] = answered + split.refused
        return response


def _timeout_ms(body: Any) -> int | None:
    """The request's own timeout, for the APIs that have one (all of them request messages;
    a dict body is of an API without one)."""
    return getattr(body, "timeout_ms", None)
