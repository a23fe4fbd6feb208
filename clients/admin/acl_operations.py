"""ACL administration (CreateAcls, DescribeAcls, DeleteAcls) as admin operations, with
Kafka's AclBinding vocabulary: a resource pattern plus an access control entry, and their
filters (None: any name, principal or host)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from clients.admin.operations import Call, Operation, _fixed, _raise_for
from clients.protocol import ApiKey
from clients.protocol.acl_types import AclOperation, AclPermissionType, PatternType, ResourceType


@dataclass(frozen=True, order=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def __str__(self) -> str:  # as Kafka's ResourcePattern.toString
        return (f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
                f"patternType={self.pattern_type.name})")


@dataclass(frozen=True, order=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __str__(self) -> str:  # as Kafka's AccessControlEntry.toString
        return (f"(principal={self.principal}, host={self.host}, "
                f"operation={self.operation.name}, permissionType={self.permission_type.name})")


@dataclass(frozen=True, order=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


@dataclass(frozen=True)
class AclBindingFilter:
    """Which ACLs to describe or delete; pattern type MATCH also finds the wildcard and
    prefixed patterns that apply to `name`."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def wire(self) -> dict[str, Any]:
        return {"resource_type_filter": self.resource_type, "resource_name_filter": self.name,
                "pattern_type_filter": self.pattern_type, "principal_filter": self.principal,
                "host_filter": self.host, "operation": self.operation,
                "permission_type": self.permission_type}

    def __str__(self) -> str:  # as Kafka's ResourcePatternFilter.toString
        return (f"ResourcePatternFilter(resourceType={self.resource_type.name}, "
                f"name={self.name}, patternType={self.pattern_type.name})")


def _binding(rtype: int, name: str, ptype: int, principal: str, host: str, op: int,
             perm: int) -> AclBinding:
    return AclBinding(ResourcePattern(ResourceType(rtype), name, PatternType(ptype)),
                      AccessControlEntry(principal, host, AclOperation(op),
                                         AclPermissionType(perm)))


def create_acls(bindings: Iterable[AclBinding]) -> Operation:
    """Create every binding; the first refusal raises KafkaError."""
    bindings = list(bindings)
    creations = [{"resource_type": b.pattern.resource_type, "resource_name": b.pattern.name,
                  "resource_pattern_type": b.pattern.pattern_type, "principal": b.entry.principal,
                  "host": b.entry.host, "operation": b.entry.operation,
                  "permission_type": b.entry.permission_type} for b in bindings]
    if not creations:
        return None
    response = yield Call(ApiKey.CREATE_ACLS, _fixed({"creations": creations}))
    for binding, result in zip(bindings, response["results"]):
        _raise_for(result["error_code"], result.get("error_message"), f"creating {binding}")
    return None


def describe_acls(acl_filter: AclBindingFilter) -> Operation:
    """The ACLs `acl_filter` matches."""
    response = yield Call(ApiKey.DESCRIBE_ACLS, _fixed(acl_filter.wire()))
    _raise_for(response["error_code"], response.get("error_message"), "describing ACLs")
    return [_binding(r["resource_type"], r["resource_name"], r["pattern_type"], a["principal"],
                     a["host"], a["operation"], a["permission_type"])
            for r in response["resources"] for a in r["acls"]]


def delete_acls(filters: Iterable[AclBindingFilter]) -> Operation:
    """Delete every ACL any filter matches; returns the deleted bindings."""
    filters = list(filters)
    if not filters:
        return []
    response = yield Call(ApiKey.DELETE_ACLS, _fixed({"filters": [f.wire() for f in filters]}))
    deleted: list[AclBinding] = []
    for acl_filter, result in zip(filters, response["filter_results"]):
        _raise_for(result["error_code"], result.get("error_message"), f"deleting {acl_filter}")
        deleted.extend(_binding(m["resource_type"], m["resource_name"], m["pattern_type"],
                                m["principal"], m["host"], m["operation"], m["permission_type"])
                       for m in result["matching_acls"])
    return deleted
