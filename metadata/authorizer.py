"""The decision of Kafka's StandardAuthorizer, as a pure function of the ACLs.

A super user may do anything. Otherwise the ACLs covering the resource (literal name,
wildcard "*", matching PREFIXED patterns) are checked for the principal (or "User:*") and
the client host (or "*"): any matching DENY denies, else any matching ALLOW allows. When no
ACL at all covers the resource the answer is `allow.everyone.if.no.acl.found`; when some do
but none matches, it is denied. ALLOW ACLs for READ, WRITE, DELETE or ALTER also allow
DESCRIBE, and ALTER_CONFIGS also allows DESCRIBE_CONFIGS; ALL matches every operation.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from metadata.acls import (
    RESOURCE_OPERATIONS,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    StandardAcl,
    AclImage,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

_IMPLIES_DESCRIBE = frozenset({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE,
                               AclOperation.DELETE, AclOperation.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS,
                                       AclOperation.ALTER_CONFIGS})


def parse_super_users(value: str | None) -> frozenset[str]:
    """`super.users`: principals separated by semicolons, each "<type>:<name>"."""
    users = set()
    for part in (value or "").split(";"):
        principal = part.strip()
        if not principal:
            continue
        kind, sep, name = principal.partition(":")
        if not sep or not kind or not name:
            raise ValueError(f"{principal!r} is not a principal of the form User:<name>")
        users.add(principal)
    return frozenset(users)


def _grants(acl: StandardAcl, operation: int) -> bool:
    """Whether `acl` (principal and host already matched) speaks to `operation`."""
    if acl.operation == AclOperation.ALL or acl.operation == operation:
        return True
    if acl.permission_type != AclPermissionType.ALLOW:
        return False  # implications widen ALLOW only: DENY READ does not deny DESCRIBE
    if operation == AclOperation.DESCRIBE:
        return acl.operation in _IMPLIES_DESCRIBE
    if operation == AclOperation.DESCRIBE_CONFIGS:
        return acl.operation in _IMPLIES_DESCRIBE_CONFIGS
    return False


@dataclass(frozen=True, slots=True)
class StandardAuthorizer:
    """`super.users` and `allow.everyone.if.no.acl.found`, applied to an AclImage."""

    super_users: frozenset[str] = frozenset()
    allow_if_no_acl: bool = False

    def authorize(self, acls: AclImage, principal: str, host: str, operation: int,
                  resource_type: int, resource_name: str) -> bool:
        """Whether `principal` connecting from `host` may do `operation` on the resource."""
        if principal in self.super_users:
            return True
        found_any = False
        allowed = False
        for acl in acls.applicable(resource_type, resource_name):
            found_any = True
            if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if acl.host != WILDCARD_HOST and acl.host != host:
                continue
            if not _grants(acl, operation):
                continue
            if acl.permission_type == AclPermissionType.DENY:
                return False
            allowed = True
        if allowed:
            return True
        return self.allow_if_no_acl and not found_any

    def authorize_by_resource_type(self, acls: AclImage, principal: str, host: str,
                                   operation: int, resource_type: int) -> bool:
        """Whether `principal` may do `operation` on at least one resource of the type
        (Kafka's Authorizer.authorizeByResourceType): some ALLOW that no DENY of the same
        or a shorter covering pattern cancels."""
        if self.authorize(acls, principal, host, operation, resource_type, "hardcode"):
            return True
        deny_literal: set[str] = set()
        deny_prefixed: set[str] = set()
        allow: list[tuple[int, str]] = []
        for acl in acls.of_type(resource_type):
            if acl.host != WILDCARD_HOST and acl.host != host:
                continue
            if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if acl.operation != operation and acl.operation != AclOperation.ALL:
                continue
            if acl.permission_type == AclPermissionType.DENY:
                if acl.pattern_type == PatternType.LITERAL:
                    if acl.resource_name == WILDCARD_RESOURCE:
                        return False
                    deny_literal.add(acl.resource_name)
                else:
                    deny_prefixed.add(acl.resource_name)
            elif acl.permission_type == AclPermissionType.ALLOW:
                if acl.pattern_type == PatternType.LITERAL and \
                        acl.resource_name == WILDCARD_RESOURCE:
                    return True
                allow.append((acl.pattern_type, acl.resource_name))
        for pattern_type, name in allow:
            if pattern_type == PatternType.LITERAL and name in deny_literal:
                continue
            if any(name[:i] in deny_prefixed for i in range(1, len(name) + 1)):
                continue
            return True
        return False

    def authorized_operations(self, acls: AclImage, principal: str, host: str,
                              resource_type: ResourceType, resource_name: str) -> int:
        """The bit field of the resource type's operations the principal may do (the
        `*_authorized_operations` fields of Metadata, DescribeCluster, DescribeGroups)."""
        bits = 0
        for operation in RESOURCE_OPERATIONS.get(resource_type, ()):
            if self.authorize(acls, principal, host, operation, resource_type, resource_name):
                bits |= 1 << operation
        return bits

    def filter_authorized(self, acls: AclImage, principal: str, host: str, operation: int,
                          resource_type: int, names: Iterable[str]) -> set[str]:
        """The names among `names` the principal may do `operation` on."""
        return {name for name in set(names)
                if self.authorize(acls, principal, host, operation, resource_type, name)}
