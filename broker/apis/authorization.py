"""Authorization in the request layer: the checks handlers make per resource, and the
router's request-wide hook.

`Authorization` is what handlers are given: `allowed(ctx, operation, resource_type, name)`
answers one Kafka `authorize` call for the request's principal and client host against the
ACLs of the current metadata image, `allowed_names` filters many names at once. Without an
authorizer (`authorizer.class.name` unset) every check passes, as in Kafka. Handlers answer
a refusal with TOPIC_/GROUP_/CLUSTER_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED where Kafka does,
per topic or partition where Kafka answers per topic or partition. `install_broker_apis`
gives the broker's `Authorization` to every handler family; a family takes it as
`authz: Authorization = ALLOW_ALL` in its constructor.

For a handler that needs Kafka's error code rather than a yes/no, `refusal(ctx, operation,
resource_type, name)` answers NONE or the resource type's *_AUTHORIZATION_FAILED code; e.g.
a transactional API (Kafka's AddOffsetsToTxn):

    code = (authz.refusal(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id)
            or authz.refusal(ctx, AclOperation.READ, ResourceType.GROUP, group_id))

`RequestAuthorizer` is the router's hook: APIs whose whole request needs one operation on
the cluster (the ACL APIs, the controller RPCs) are refused there with
CLUSTER_AUTHORIZATION_FAILED before their handler runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, Mapping

from broker.apis.request import DecodedRequest, RequestContext
from clients.protocol import ApiKey, ErrorCode
from metadata.acls import CLUSTER_NAME, RESOURCE_OPERATIONS, AclOperation, ResourceType
from metadata.authorizer import StandardAuthorizer, parse_super_users
from metadata.image import MetadataImage

if TYPE_CHECKING:
    from broker.config import ServerConfig

__all__ = ["AclOperation", "ResourceType", "Authorization", "RequestAuthorizer",
           "ALLOW_ALL", "authorizer_from_config", "BROKER_CLUSTER_OPERATIONS",
           "CONTROLLER_CLUSTER_OPERATIONS", "REFUSALS"]


def authorizer_from_config(config: "ServerConfig") -> StandardAuthorizer | None:
    """The configured authorizer, or None when `authorizer.class.name` is empty (the keys
    were validated when the configuration was loaded)."""
    if not config.get("authorizer.class.name"):
        return None
    return StandardAuthorizer(parse_super_users(str(config.get("super.users") or "")),
                              bool(config.get("allow.everyone.if.no.acl.found")))


# The error of a refused action, by the resource type refused.
REFUSALS: Mapping[ResourceType, int] = {
    ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
}


def _empty_image() -> MetadataImage:
    return MetadataImage.empty()


class Authorization:
    """Per-resource authorization of the request's principal (Kafka's AuthHelper)."""

    def __init__(self, authorizer: StandardAuthorizer | None,
                 image: Callable[[], MetadataImage] = _empty_image) -> None:
        self.authorizer = authorizer
        self._image = image

    @property
    def enabled(self) -> bool:
        return self.authorizer is not None

    def allowed(self, ctx: RequestContext, operation: AclOperation,
                resource_type: ResourceType, name: str = CLUSTER_NAME) -> bool:
        """Whether the request's principal may do `operation` on the resource."""
        if self.authorizer is None:
            return True
        return self.authorizer.authorize(self._image().acls, ctx.principal, ctx.peer[0],
                                         operation, resource_type, name)

    def refusal(self, ctx: RequestContext, operation: AclOperation,
                resource_type: ResourceType, name: str = CLUSTER_NAME) -> int:
        """NONE when allowed, else the error Kafka answers for the resource type."""
        if self.allowed(ctx, operation, resource_type, name):
            return ErrorCode.NONE
        return REFUSALS[resource_type]

    def cluster(self, ctx: RequestContext, operation: AclOperation) -> bool:
        """`operation` on the cluster resource."""
        return self.allowed(ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def allowed_names(self, ctx: RequestContext, operation: AclOperation,
                      resource_type: ResourceType, names: Iterable[str]) -> set[str]:
        """The names among `names` the principal may do `operation` on."""
        if self.authorizer is None:
            return set(names)
        return self.authorizer.filter_authorized(self._image().acls, ctx.principal,
                                                 ctx.peer[0], operation, resource_type, names)

    def allowed_on_any(self, ctx: RequestContext, operation: AclOperation,
                       resource_type: ResourceType) -> bool:
        """Whether the principal may do `operation` on some resource of the type."""
        if self.authorizer is None:
            return True
        return self.authorizer.authorize_by_resource_type(
            self._image().acls, ctx.principal, ctx.peer[0], operation, resource_type)

    def operations(self, ctx: RequestContext, resource_type: ResourceType,
                   name: str = CLUSTER_NAME) -> int:
        """The `*_authorized_operations` bit field of the resource for this principal."""
        if self.authorizer is None:
            return sum(1 << op for op in RESOURCE_OPERATIONS[resource_type])
        return self.authorizer.authorized_operations(self._image().acls, ctx.principal,
                                                     ctx.peer[0], resource_type, name)


ALLOW_ALL = Authorization(None)
"""Checks that always pass: what handlers use when no authorizer is configured."""

# Request-wide cluster operations on a broker's client listeners.
BROKER_CLUSTER_OPERATIONS: Mapping[int, AclOperation] = {
    ApiKey.DESCRIBE_ACLS: AclOperation.DESCRIBE,
    ApiKey.CREATE_ACLS: AclOperation.ALTER,
    ApiKey.DELETE_ACLS: AclOperation.ALTER,
    ApiKey.DESCRIBE_QUORUM: AclOperation.DESCRIBE,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: AclOperation.DESCRIBE,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: AclOperation.ALTER,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: AclOperation.ALTER,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: AclOperation.DESCRIBE,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: AclOperation.DESCRIBE_CONFIGS,
    ApiKey.ALTER_CLIENT_QUOTAS: AclOperation.ALTER_CONFIGS,
    # Markers come from transaction coordinators, i.e. brokers.
    ApiKey.WRITE_TXN_MARKERS: AclOperation.CLUSTER_ACTION,
}

# On the CONTROLLER listener only brokers (and super users) act: the broker RPCs need
# CLUSTER_ACTION, and so do the admin requests brokers forward after authorizing the
# client's principal themselves (as Kafka's Envelope needs CLUSTER_ACTION of the broker).
CONTROLLER_CLUSTER_OPERATIONS: Mapping[int, AclOperation] = {
    **{key: AclOperation.CLUSTER_ACTION for key in (
        ApiKey.BROKER_REGISTRATION, ApiKey.BROKER_HEARTBEAT, ApiKey.ALTER_PARTITION,
        ApiKey.ALLOCATE_PRODUCER_IDS, ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS,
        ApiKey.CREATE_PARTITIONS, ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ALTER_CONFIGS,
        ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS, ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.LIST_PARTITION_REASSIGNMENTS)},
    ApiKey.ALTER_CLIENT_QUOTAS: AclOperation.CLUSTER_ACTION,
    ApiKey.DESCRIBE_QUORUM: AclOperation.DESCRIBE,
}


class RequestAuthorizer:
    """The router hook: refuses a request whose API needs a cluster operation the
    principal lacks (`operations`: API key -> operation on the cluster)."""

    def __init__(self, authorization: Authorization,
                 operations: Mapping[int, AclOperation]) -> None:
        self.authorization = authorization
        self._operations = dict(operations)

    def authorize(self, request: DecodedRequest, ctx: RequestContext) -> int:
        operation = self._operations.get(request.api_key)
        if operation is None or self.authorization.cluster(ctx, operation):
            return ErrorCode.NONE
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
