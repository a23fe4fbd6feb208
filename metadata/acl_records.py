"""The ACL metadata records (AccessControlEntryRecord, RemoveAccessControlEntryRecord) and
their replay: the ACL part of a MetadataDelta."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import ClassVar

from metadata.acls import StandardAcl, AclImage
from metadata.errors import MetadataReplayError


@dataclass(frozen=True, slots=True)
class AccessControlEntryRecord:
    """Adds one ACL under a cluster-unique id."""

    API_KEY: ClassVar[int] = 18
    VERSION: ClassVar[int] = 0

    id: uuid.UUID
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    @classmethod
    def of(cls, acl_id: uuid.UUID, acl: StandardAcl) -> AccessControlEntryRecord:
        return cls(acl_id, acl.resource_type, acl.resource_name, acl.pattern_type,
                   acl.principal, acl.host, acl.operation, acl.permission_type)

    def binding(self) -> StandardAcl:
        return StandardAcl(self.resource_type, self.resource_name, self.pattern_type,
                           self.principal, self.host, self.operation, self.permission_type)


@dataclass(frozen=True, slots=True)
class RemoveAccessControlEntryRecord:
    """Removes the ACL with this id."""

    API_KEY: ClassVar[int] = 19
    VERSION: ClassVar[int] = 0

    id: uuid.UUID


class AclChanges:
    """ACLs added and removed by one delta, on top of the base image's ACLs."""

    def __init__(self, base: AclImage) -> None:
        self.base = base
        self.added: dict[uuid.UUID, StandardAcl] = {}
        self.removed: set[uuid.UUID] = set()

    def current(self, acl_id: uuid.UUID) -> StandardAcl | None:
        if acl_id in self.added:
            return self.added[acl_id]
        if acl_id in self.removed:
            return None
        return self.base.by_id.get(acl_id)

    def replay_add(self, record: AccessControlEntryRecord) -> None:
        if self.current(record.id) is not None:
            raise MetadataReplayError(f"an ACL with id {record.id} already exists")
        self.added[record.id] = record.binding()

    def replay_remove(self, record: RemoveAccessControlEntryRecord) -> None:
        if self.current(record.id) is None:
            raise MetadataReplayError(f"no ACL with id {record.id}")
        if self.added.pop(record.id, None) is None:
            self.removed.add(record.id)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)

    def apply(self) -> AclImage:
        return self.base.with_changes(self.added, self.removed)


def acl_records(acls: AclImage) -> list[AccessControlEntryRecord]:
    """Records that rebuild `acls` (snapshots), in a stable order."""
    return [AccessControlEntryRecord.of(acl_id, acl)
            for acl_id, acl in sorted(acls.by_id.items(), key=lambda item: item[0].bytes)]
