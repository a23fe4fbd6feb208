"""DescribeAcls from the broker's image; CreateAcls and DeleteAcls forwarded to the active
controller (which writes the ACL records), with their error answers.

Without an authorizer all three answer SECURITY_DISABLED, as Kafka's brokers do. The
request-wide checks (DESCRIBE or ALTER on the cluster) are the router hook's.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable

from broker.apis.request import DecodedRequest, ErrorBody, Handler, RequestContext, RequestRouter
from clients.protocol import ApiKey, ErrorCode
from clients.protocol.messages.describe_acls import (
    DescribeAclsRequestData,
    DescribeAclsResponseData,
)
from metadata.acls import StandardAcl, AclFilter, AclValidationError
from metadata.controller.acls import create_acls_error, delete_acls_error
from metadata.image import MetadataImage

_NO_AUTHORIZER = "No Authorizer is configured on the broker"

DescribeAclsResource = DescribeAclsResponseData.DescribeAclsResource


def describe_acls_error(body: DescribeAclsRequestData, version: int, code: int,
                        message: str | None = None) -> DescribeAclsResponseData:
    return DescribeAclsResponseData(error_code=code, error_message=message)


ACL_MUTATION_ERRORS: dict[int, ErrorBody] = {
    ApiKey.CREATE_ACLS: create_acls_error,
    ApiKey.DELETE_ACLS: delete_acls_error,
}
ACL_ERRORS: dict[int, ErrorBody] = {**ACL_MUTATION_ERRORS, ApiKey.DESCRIBE_ACLS: describe_acls_error}


def describe_resources(acls: list[StandardAcl]) -> list[DescribeAclsResource]:
    """DescribeAcls `resources`: the ACLs grouped by resource pattern."""
    grouped: dict[tuple[int, str, int], list[DescribeAclsResponseData.AclDescription]] = (
        defaultdict(list))
    for acl in acls:
        grouped[(acl.resource_type, acl.resource_name, acl.pattern_type)].append(
            DescribeAclsResponseData.AclDescription(
                principal=acl.principal, host=acl.host, operation=acl.operation,
                permission_type=acl.permission_type))
    return [DescribeAclsResource(resource_type=rtype, resource_name=name, pattern_type=ptype,
                                 acls=entries)
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

    async def describe_acls(self, request: DecodedRequest,
                            ctx: RequestContext) -> DescribeAclsResponseData:
        body: DescribeAclsRequestData = request.body
        version = request.api_version
        if not self._enabled:
            return describe_acls_error(body, version, ErrorCode.SECURITY_DISABLED, _NO_AUTHORIZER)
        acl_filter = AclFilter.from_wire(body)
        try:
            acl_filter.validate()
        except AclValidationError as exc:
            return describe_acls_error(body, version, ErrorCode.INVALID_REQUEST, str(exc))
        acls = [acl for _, acl in self._image().acls.matching(acl_filter)]
        return DescribeAclsResponseData(error_code=ErrorCode.NONE, error_message=None,
                                        resources=describe_resources(acls))

    async def alter_acls(self, request: DecodedRequest, ctx: RequestContext) -> Any:
        if not self._enabled:
            return ACL_MUTATION_ERRORS[request.api_key](
                request.body, request.api_version, ErrorCode.SECURITY_DISABLED,
                "No Authorizer is configured.")
        assert self._forward is not None
        return await self._forward(request, ctx)
