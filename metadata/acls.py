"""Access control lists: Kafka's ACL vocabulary, bindings, filters and the immutable,
indexed set of ACLs a metadata image holds.

The vocabulary (ResourceType, PatternType, AclOperation, AclPermissionType) is the wire's,
from `clients.protocol.acl_types`, as Kafka's metadata module uses the clients' enums. The index
keys ACLs by (resource type, pattern type, resource name), and remembers which lengths of
PREFIXED names exist per resource type, so the ACLs that apply to one resource are found
with a handful of dictionary lookups however many ACLs there are.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import IntEnum
from types import MappingProxyType

from clients.protocol.acl_types import (
    CLUSTER_NAME,
    RESOURCE_OPERATIONS,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from clients.protocol.messages.delete_acls import DeleteAclsRequestData
from clients.protocol.messages.describe_acls import DescribeAclsRequestData


__all__ = ["AclOperation", "AclPermissionType", "PatternType", "ResourceType", "StandardAcl",
           "AclFilter", "AclImage", "AclValidationError", "CLUSTER_NAME", "WILDCARD_HOST",
           "WILDCARD_PRINCIPAL", "WILDCARD_RESOURCE", "RESOURCE_OPERATIONS",
           "SUPPORTED_RESOURCE_TYPES"]

# Resource types ACLs may name here: the token and user resources have no API behind them.
SUPPORTED_RESOURCE_TYPES = frozenset({ResourceType.TOPIC, ResourceType.GROUP,
                                      ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID})


class AclValidationError(ValueError):
    """An ACL or filter that cannot be stored or applied (Kafka's InvalidRequestException)."""


@dataclass(frozen=True, slots=True)
class StandardAcl:
    """One ACL: a resource pattern and an access control entry (Kafka's StandardAcl)."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    def validate(self) -> None:
        """Raise AclValidationError unless this ACL may be stored (AclControlManager rules)."""
        if self.resource_type not in SUPPORTED_RESOURCE_TYPES:
            raise AclValidationError(f"Invalid resourceType {_name(ResourceType, self.resource_type)}")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise AclValidationError(f"Invalid patternType {_name(PatternType, self.pattern_type)}")
        if self.operation in (AclOperation.UNKNOWN, AclOperation.ANY) or \
                self.operation not in AclOperation._value2member_map_:
            raise AclValidationError(f"Invalid operation {_name(AclOperation, self.operation)}")
        if self.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            raise AclValidationError(
                f"Invalid permissionType {_name(AclPermissionType, self.permission_type)}")
        if not self.resource_name:
            raise AclValidationError("Resource name should not be empty")
        if self.resource_type == ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            raise AclValidationError(
                f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        kind, sep, name = self.principal.partition(":")
        if not sep or not kind or not name:
            raise AclValidationError(f"Invalid principal {self.principal!r}: expected "
                                     "'<type>:<name>', e.g. User:alice")
        if not self.host:
            raise AclValidationError("Host should not be empty")


@dataclass(frozen=True, slots=True)
class AclFilter:
    """Kafka's AclBindingFilter: None matches any name, principal or host; ANY matches any
    type, operation or permission; pattern type MATCH matches every pattern that applies to
    the named resource (literal, wildcard and prefixes)."""

    resource_type: int = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: int = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: int = AclOperation.ANY
    permission_type: int = AclPermissionType.ANY

    @classmethod
    def from_wire(cls, entry: DescribeAclsRequestData | DeleteAclsRequestData.DeleteAclsFilter
                  ) -> AclFilter:
        """The filter of a DescribeAcls request or a DeleteAcls filter entry (v0 filters are
        LITERAL, the field's default)."""
        return cls(entry.resource_type_filter, entry.resource_name_filter,
                   entry.pattern_type_filter, entry.principal_filter, entry.host_filter,
                   entry.operation, entry.permission_type)

    def validate(self) -> None:
        for value, enum in ((self.resource_type, ResourceType), (self.pattern_type, PatternType),
                            (self.operation, AclOperation),
                            (self.permission_type, AclPermissionType)):
            if value not in enum._value2member_map_ or value == 0:
                raise AclValidationError(f"Unknown {enum.__name__} {value} in the filter")

    def matches(self, acl: StandardAcl) -> bool:
        return self.matches_pattern(acl) and self.matches_entry(acl)

    def matches_pattern(self, acl: StandardAcl) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and \
                self.pattern_type != acl.pattern_type:
            return False
        if self.resource_name is None:
            return True
        if self.pattern_type in (PatternType.ANY, acl.pattern_type):
            return self.resource_name == acl.resource_name
        # MATCH: the patterns that would apply to the resource named in the filter.
        if acl.pattern_type == PatternType.LITERAL:
            return acl.resource_name in (self.resource_name, WILDCARD_RESOURCE)
        return self.resource_name.startswith(acl.resource_name)

    def matches_entry(self, acl: StandardAcl) -> bool:
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != acl.operation:
            return False
        return (self.permission_type == AclPermissionType.ANY
                or self.permission_type == acl.permission_type)


def _name(enum: type[IntEnum], value: int) -> str:
    member = enum._value2member_map_.get(value)
    return member.name if member is not None else str(value)


PatternKey = tuple[int, int, str]
"""(resource type, pattern type, resource name): where the index files an ACL."""


class AclImage:
    """The ACLs of one metadata image, immutable once built; `by_id` keeps the record ids
    so RemoveAccessControlEntryRecord can name them."""

    __slots__ = ("_by_id", "_by_pattern", "_prefix_lengths")

    def __init__(self, acls: Mapping[uuid.UUID, StandardAcl] | None = None) -> None:
        self._by_id: Mapping[uuid.UUID, StandardAcl] = MappingProxyType(dict(acls or {}))
        by_pattern: dict[PatternKey, list[StandardAcl]] = {}
        lengths: dict[int, set[int]] = {}
        for acl in self._by_id.values():
            by_pattern.setdefault((acl.resource_type, acl.pattern_type, acl.resource_name),
                                  []).append(acl)
            if acl.pattern_type == PatternType.PREFIXED:
                lengths.setdefault(acl.resource_type, set()).add(len(acl.resource_name))
        self._by_pattern = {key: tuple(value) for key, value in by_pattern.items()}
        self._prefix_lengths = {rtype: tuple(sorted(v)) for rtype, v in lengths.items()}

    @classmethod
    def empty(cls) -> AclImage:
        return _EMPTY

    @property
    def by_id(self) -> Mapping[uuid.UUID, StandardAcl]:
        return self._by_id

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self) -> Iterator[StandardAcl]:
        return iter(self._by_id.values())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AclImage) and dict(self._by_id) == dict(other._by_id)

    def __hash__(self) -> int:
        return hash(frozenset(self._by_id.items()))

    def __repr__(self) -> str:
        return f"AclImage({len(self._by_id)} acls)"

    def applicable(self, resource_type: int, name: str) -> Iterator[StandardAcl]:
        """Every ACL whose pattern covers the resource: the literal name, the wildcard
        and each PREFIXED pattern the name starts with."""
        by_pattern = self._by_pattern
        yield from by_pattern.get((resource_type, PatternType.LITERAL, name), ())
        if name != WILDCARD_RESOURCE:
            yield from by_pattern.get((resource_type, PatternType.LITERAL, WILDCARD_RESOURCE), ())
        for length in self._prefix_lengths.get(resource_type, ()):
            if length > len(name):
                break
            yield from by_pattern.get((resource_type, PatternType.PREFIXED, name[:length]), ())

    def of_type(self, resource_type: int) -> Iterator[StandardAcl]:
        """Every ACL on `resource_type` (for by-type decisions and listings)."""
        return (acl for acl in self._by_id.values() if acl.resource_type == resource_type)

    def matching(self, acl_filter: AclFilter) -> list[tuple[uuid.UUID, StandardAcl]]:
        """(id, ACL) of every ACL `acl_filter` matches."""
        return [(acl_id, acl) for acl_id, acl in self._by_id.items() if acl_filter.matches(acl)]

    def with_changes(self, added: Mapping[uuid.UUID, StandardAcl],
                     removed: Iterable[uuid.UUID]) -> AclImage:
        if not added and not removed:
            return self
        acls = dict(self._by_id)
        for acl_id in removed:
            acls.pop(acl_id, None)
        acls.update(added)
        return AclImage(acls)


_EMPTY = AclImage()
