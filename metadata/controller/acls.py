"""CreateAcls and DeleteAcls on the active controller (Kafka's AclControlManager).

Each valid new ACL becomes an AccessControlEntryRecord under a fresh id; an ACL that exists
already succeeds without a record. DeleteAcls removes every ACL any filter matches, all or
nothing, and reports each filter's matches.
"""

from __future__ import annotations

import uuid
from typing import Any, Callable

from clients.protocol import ErrorCode
from metadata.acl_records import RemoveAccessControlEntryRecord, acl_entry_record
from metadata.acls import StandardAcl, AclFilter, AclValidationError, PatternType
from metadata.controller import Decision
from metadata.image import MetadataImage
from metadata.records import MetadataRecord

# Kafka's QuorumController.MAX_RECORDS_PER_USER_OP: the bound of one request's records.
MAX_RECORDS_PER_USER_OP = 10_000


def binding_of_creation(entry: dict[str, Any]) -> StandardAcl:
    """The ACL a CreateAcls creation entry describes (v0 entries are LITERAL)."""
    return StandardAcl(int(entry["resource_type"]), entry["resource_name"],
                       int(entry.get("resource_pattern_type", PatternType.LITERAL)),
                       entry["principal"], entry["host"], int(entry["operation"]),
                       int(entry["permission_type"]))


def create_acls(image: MetadataImage, request: dict[str, Any], now_ms: int, *,
                new_id: Callable[[], uuid.UUID] = uuid.uuid4) -> Decision:
    """CreateAclsRequest -> AccessControlEntryRecords + one result per creation."""
    existing = set(image.acls.by_id.values())
    taken = set(image.acls.by_id)
    records: list[MetadataRecord] = []
    results = []
    for entry in request.get("creations") or ():
        try:
            acl = binding_of_creation(entry)
            acl.validate()
        except AclValidationError as exc:
            results.append({"error_code": ErrorCode.INVALID_REQUEST, "error_message": str(exc)})
            continue
        if acl not in existing:
            if len(records) >= MAX_RECORDS_PER_USER_OP:
                results.append({"error_code": ErrorCode.INVALID_REQUEST,
                                "error_message": f"Cannot create more than "
                                                 f"{MAX_RECORDS_PER_USER_OP} ACLs at once"})
                continue
            acl_id = new_id()
            while acl_id in taken:
                acl_id = new_id()
            taken.add(acl_id)
            existing.add(acl)
            records.append(acl_entry_record(acl_id, acl))
        results.append({"error_code": ErrorCode.NONE, "error_message": None})
    return records, {"throttle_time_ms": 0, "results": results}


def matching_acl_entry(acl: StandardAcl) -> dict[str, Any]:
    """A DeleteAcls matching_acls entry for a deleted ACL."""
    return {"error_code": ErrorCode.NONE, "error_message": None,
            "resource_type": acl.resource_type, "resource_name": acl.resource_name,
            "pattern_type": acl.pattern_type, "principal": acl.principal, "host": acl.host,
            "operation": acl.operation, "permission_type": acl.permission_type}


def delete_acls(image: MetadataImage, request: dict[str, Any], now_ms: int) -> Decision:
    """DeleteAclsRequest -> RemoveAccessControlEntryRecords + one result per filter."""
    removed: dict[uuid.UUID, None] = {}
    results = []
    for entry in request.get("filters") or ():
        try:
            acl_filter = AclFilter.from_wire(entry)
            acl_filter.validate()
        except AclValidationError as exc:
            results.append({"error_code": ErrorCode.INVALID_REQUEST, "error_message": str(exc),
                            "matching_acls": []})
            continue
        matches = image.acls.matching(acl_filter)
        removed.update((acl_id, None) for acl_id, _ in matches)
        results.append({"error_code": ErrorCode.NONE, "error_message": None,
                        "matching_acls": [matching_acl_entry(acl) for _, acl in matches]})
    if len(removed) > MAX_RECORDS_PER_USER_OP:
        message = f"Cannot remove more than {MAX_RECORDS_PER_USER_OP} ACLs in one request"
        return [], {"throttle_time_ms": 0, "filter_results": [
            {"error_code": ErrorCode.INVALID_REQUEST, "error_message": message,
             "matching_acls": []} for _ in results]}
    records: list[MetadataRecord] = [RemoveAccessControlEntryRecord(acl_id) for acl_id in removed]
    return records, {"throttle_time_ms": 0, "filter_results": results}
