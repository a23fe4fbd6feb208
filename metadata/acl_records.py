"""The ACL metadata records (AccessControlEntryRecord, RemoveAccessControlEntryRecord) and
their replay: the ACL part of a MetadataDelta."""

from __future__ import annotations

import uuid

from metadata.acls import StandardAcl, AclImage
from metadata.errors import MetadataReplayError
from metadata.record_classes import AccessControlEntryRecord, RemoveAccessControlEntryRecord

__all__ = ["AccessControlEntryRecord", "AclChanges", "RemoveAccessControlEntryRecord",
           "acl_binding", "acl_entry_record"]


def acl_entry_record(acl_id: uuid.UUID, acl: StandardAcl) -> AccessControlEntryRecord:
    """The record that adds `acl` under the cluster-unique `acl_id`."""
    return AccessControlEntryRecord(acl_id, acl.resource_type, acl.resource_name,
                                    acl.pattern_type, acl.principal, acl.host, acl.operation,
                                    acl.permission_type)


def acl_binding(record: AccessControlEntryRecord) -> StandardAcl:
    """The ACL a record adds."""
    return StandardAcl(record.resource_type, record.resource_name, record.pattern_type,
                       record.principal, record.host, record.operation, record.permission_type)


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
        self.added[record.id] = acl_binding(record)

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
    return [acl_entry_record(acl_id, acl)
            for acl_id, acl in sorted(acls.by_id.items(), key=lambda item: item[0].bytes)]
