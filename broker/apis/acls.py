"""DescribeAcls from the broker's image; CreateAcls and DeleteAcls forwarded to the active
controller (which writes the ACL records), with their error answers.

Without an authorizer all three answer SECURITY_DISABLED, as Kafka's brokers do. The
request-wide checks (DESCRIBE or ALTER on the cluster) are the router hook's.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Mapping

from broker.apis.request import DecodedRequest, ErrorBody, Handler, RequestContext, RequestRouter
from clients.protocol import ApiKey, ErrorCode
from metadata.acls import StandardAcl, AclFilter, AclValidationError
from metadata.image import MetadataImage

_NO_AUTHORIZER = "No Authorizer is configured on the broker"


def describe_acls_error(body: Mapping[str, Any], version: int, code: int,
                        message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message,
            "resources": []}


def create_acls_error(body: Mapping[str, Any], version: int, code: int,
                      message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "results": [
        {"error_code": code, "error_message": message} for _ in body.get("creations") or ()]}


def delete_acls_error(body: Mapping[str, Any], version: int, code: int,
                      message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "filter_results": [
        {"error_code": code, "error_message": message, "matching_acls": []}
        for _ in body.get("filters") or ()]}


ACL_MUTATION_ERRORS: dict[int, ErrorBody] = {
    ApiKey.CREATE_ACLS: create_acls_error,
    ApiKey.DELETE_ACLS: delete_acls_error,
}
ACL_ERRORS: dict[int, ErrorBody] = {**ACL_MUTATION_ERRORS, ApiKey.DESCRIBE_ACLS: describe_acls_error}


def describe_resources(acls: list[StandardAcl]) -> list[dict[str, Any]]:
    """DescribeAcls `resources`: the ACLs grouped by resource pattern."""
    grouped: dict[tuple[int, str, int], list[dict[str, Any]]] = defaultdict(list)
    for acl in acls:
        grouped[(acl.resource_type, acl.resource_name, acl.pattern_type)].append(
            {"principal": acl.principal, "host": acl.host, "operation": acl.operation,
             "permission_type": acl.permission_type})
    return [{"resource_type": rtype, "resource_name": name, "pattern_type": ptype, "acls": entries}
            for (rtype, name, ptype), entries in grouped.items()]


class AclHandlers:
    """The ACL APIs of a broker listener; `forward` relays to the active controller."""

    def __init__(self, image: Callable[[], MetadataImage], *, enabled: bool,
                 forward: Handler | None) -> None:
        self._image = image
        self._enabled = enabled
        self._forward = forward

    def register(self, router: RequestRouter) -> None:
        router.register(ApiKey.DESCRIBE_ACLS, self.describe_acls, describe_acls_error)
        if self._forward is not None:
            for api_key, error_body in ACL_MUTATION_ERRORS.items():
                router.register(api_key, self.alter_acls, error_body)

    async def describe_acls(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        body, version = request.body, request.api_version
        if not self._enabled:
            return describe_acls_error(body, version, ErrorCode.SECURITY_DISABLED, _NO_AUTHORIZER)
        acl_filter = AclFilter.from_wire(body)
        try:
            acl_filter.validate()
        except AclValidationError as exc:
            return describe_acls_error(body, version, ErrorCode.INVALID_REQUEST, str(exc))
        acls = [acl for _, acl in self._image().acls.matching(acl_filter)]
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
                "resources": describe_resources(acls)}

    async def alter_acls(self, request: DecodedRequest, ctx: RequestContext) -> dict | None:
        if not self._enabled:
            return ACL_MUTATION_ERRORS[request.api_key](
                request.body, request.api_version, ErrorCode.SECURITY_DISABLED,
                "No Authorizer is configured.")
        assert self._forward is not None
        return await self._forward(request, ctx)
