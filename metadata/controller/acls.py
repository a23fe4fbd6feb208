"""CreateAcls and DeleteAcls on the active controller (Kafka's AclControlManager).

Each valid new ACL becomes an AccessControlEntryRecord under a fresh id; an ACL that exists
already succeeds without a record. DeleteAcls removes every ACL any filter matches, all or
nothing, and reports each filter's matches. Both responses, error answers included, are
defined here once.
"""

from __future__ import annotations

import uuid
from typing import Callable

from clients.protocol import ErrorCode
from clients.protocol.messages.create_acls import CreateAclsRequestData, CreateAclsResponseData
from clients.protocol.messages.delete_acls import DeleteAclsRequestData, DeleteAclsResponseData
from metadata.acl_records import RemoveAccessControlEntryRecord, acl_entry_record
from metadata.acls import StandardAcl, AclFilter, AclValidationError
from metadata.image import MetadataImage
from metadata.records import MetadataRecord

# Kafka's QuorumController.MAX_RECORDS_PER_USER_OP: the bound of one request's records.
MAX_RECORDS_PER_USER_OP = 10_000

CreationResult = CreateAclsResponseData.AclCreationResult
FilterResult = DeleteAclsResponseData.DeleteAclsFilterResult


def create_acls_error(body: CreateAclsRequestData, version: int, code: int,
                      message: str | None = None) -> CreateAclsResponseData:
    """Every creation of the request with `code` (CreateAcls has no top-level error)."""
    return CreateAclsResponseData(
        results=[CreationResult(error_code=code, error_message=message) for _ in body.creations])


def delete_acls_error(body: DeleteAclsRequestData, version: int, code: int,
                      message: str | None = None) -> DeleteAclsResponseData:
    """Every filter of the request with `code` and no matches."""
    return DeleteAclsResponseData(filter_results=[_filter_error(code, message)
                                                  for _ in body.filters])


def _filter_error(code: int, message: str | None) -> FilterResult:
    return FilterResult(error_code=code, error_message=message, matching_acls=[])


def binding_of_creation(entry: CreateAclsRequestData.AclCreation) -> StandardAcl:
    """The ACL a CreateAcls creation entry describes (v0 entries are LITERAL)."""
    return StandardAcl(entry.resource_type, entry.resource_name, entry.resource_pattern_type,
                       entry.principal, entry.host, entry.operation, entry.permission_type)


def create_acls(image: MetadataImage, request: CreateAclsRequestData, now_ms: int, *,
                new_id: Callable[[], uuid.UUID] = uuid.uuid4
                ) -> tuple[list[MetadataRecord], CreateAclsResponseData]:
    """CreateAclsRequest -> AccessControlEntryRecords + one result per creation."""
    existing = set(image.acls.by_id.values())
    taken = set(image.acls.by_id)
    records: list[MetadataRecord] = []
    results: list[CreationResult] = []
    for entry in request.creations:
        try:
            acl = binding_of_creation(entry)
            acl.validate()
        except AclValidationError as exc:
            results.append(CreationResult(error_code=ErrorCode.INVALID_REQUEST,
                                          error_message=str(exc)))
            continue
        if acl not in existing:
            if len(records) >= MAX_RECORDS_PER_USER_OP:
                results.append(CreationResult(
                    error_code=ErrorCode.INVALID_REQUEST,
                    error_message=f"Cannot create more than {MAX_RECORDS_PER_USER_OP} ACLs "
                                  f"at once"))
                continue
            acl_id = new_id()
            while acl_id in taken:
                acl_id = new_id()
            taken.add(acl_id)
            existing.add(acl)
            records.append(acl_entry_record(acl_id, acl))
        results.append(CreationResult(error_code=ErrorCode.NONE, error_message=None))
    return records, CreateAclsResponseData(results=results)


def matching_acl_entry(acl: StandardAcl) -> DeleteAclsResponseData.DeleteAclsMatchingAcl:
    """A DeleteAcls matching_acls entry for a deleted ACL."""
    return DeleteAclsResponseData.DeleteAclsMatchingAcl(
        error_code=ErrorCode.NONE, error_message=None, resource_type=acl.resource_type,
        resource_name=acl.resource_name, pattern_type=acl.pattern_type,
        principal=acl.principal, host=acl.host, operation=acl.operation,
        permission_type=acl.permission_type)


def delete_acls(image: MetadataImage, request: DeleteAclsRequestData, now_ms: int
                ) -> tuple[list[MetadataRecord], DeleteAclsResponseData]:
    """DeleteAclsRequest -> RemoveAccessControlEntryRecords + one result per filter."""
    removed: dict[uuid.UUID, None] = {}
    results: list[FilterResult] = []
    for entry in request.filters:
        try:
            acl_filter = AclFilter.from_wire(entry)
            acl_filter.validate()
        except AclValidationError as exc:
            results.append(_filter_error(ErrorCode.INVALID_REQUEST, str(exc)))
            continue
        matches = image.acls.matching(acl_filter)
        removed.update((acl_id, None) for acl_id, _ in matches)
        results.append(FilterResult(error_code=ErrorCode.NONE, error_message=None,
                                    matching_acls=[matching_acl_entry(acl) for _, acl in matches]))
    if len(removed) > MAX_RECORDS_PER_USER_OP:
        message = f"Cannot remove more than {MAX_RECORDS_PER_USER_OP} ACLs in one request"
        return [], delete_acls_error(request, 0, ErrorCode.INVALID_REQUEST, message)
    records: list[MetadataRecord] = [RemoveAccessControlEntryRecord(acl_id) for acl_id in removed]
    return records, DeleteAclsResponseData(filter_results=results)
