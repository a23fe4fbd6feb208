"""ACL filters (LITERAL, PREFIXED, ANY, MATCH), the controller's CreateAcls and DeleteAcls
decisions, and their records replayed into the image and its snapshot."""

from __future__ import annotations

import itertools
import uuid

from clients.protocol import ErrorCode
from clients.protocol.messages.create_acls import CreateAclsRequestData
from clients.protocol.messages.delete_acls import DeleteAclsRequestData
from metadata.acl_records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from metadata.acls import StandardAcl, AclFilter, AclOperation as Op, AclPermissionType as Perm
from metadata.acls import PatternType as Pat, ResourceType as Res
from metadata.controller.acls import create_acls, delete_acls
from metadata.delta import apply_records
from metadata.image import MetadataImage


def creation(name: str, pattern: Pat = Pat.LITERAL, principal: str = "User:alice",
             op: Op = Op.READ, rtype: Res = Res.TOPIC, perm: Perm = Perm.ALLOW
             ) -> CreateAclsRequestData.AclCreation:
    return CreateAclsRequestData.AclCreation(
        resource_type=rtype, resource_name=name, resource_pattern_type=pattern,
        principal=principal, host="*", operation=op, permission_type=perm)


def wire_filter(**fields: object) -> DeleteAclsRequestData.DeleteAclsFilter:
    base: dict[str, object] = {
        "resource_type_filter": Res.ANY, "resource_name_filter": None,
        "pattern_type_filter": Pat.ANY, "principal_filter": None, "host_filter": None,
        "operation": Op.ANY, "permission_type": Perm.ANY}
    base.update(fields)
    return DeleteAclsRequestData.DeleteAclsFilter(**base)  # type: ignore[arg-type]


def ids() -> "itertools.count[int]":
    return itertools.count(1)


def commit(image: MetadataImage, records: list) -> MetadataImage:
    return apply_records(image, records)[1]


def image_with(*creations: CreateAclsRequestData.AclCreation) -> MetadataImage:
    counter = ids()
    records, response = create_acls(MetadataImage.empty(),
                                    CreateAclsRequestData(creations=list(creations)), 0,
                                    new_id=lambda: uuid.UUID(int=next(counter)))
    assert all(r.error_code == 0 for r in response.results)
    return commit(MetadataImage.empty(), records)


def test_create_acls_records_each_new_acl_once() -> None:
    image = image_with(creation("orders"), creation("pay-", Pat.PREFIXED))
    records, response = create_acls(image, CreateAclsRequestData(creations=[
        creation("orders"), creation("orders", op=Op.WRITE), creation("orders", op=Op.WRITE)]), 0)
    assert [r.error_code for r in response.results] == [0, 0, 0]
    assert len(records) == 1 and isinstance(records[0], AccessControlEntryRecord)
    image = commit(image, records)
    assert len(image.acls) == 3


def test_create_acls_rejects_invalid_entries_with_invalid_request() -> None:
    bad = [creation(""), creation("x", pattern=Pat.MATCH), creation("x", op=Op.ANY),
           creation("x", perm=Perm.ANY), creation("other", rtype=Res.CLUSTER),
           creation("x", principal="alice"), creation("x", rtype=Res.USER)]
    records, response = create_acls(MetadataImage.empty(), CreateAclsRequestData(creations=bad), 0)
    assert records == []
    assert {r.error_code for r in response.results} == {ErrorCode.INVALID_REQUEST}
    assert all(r.error_message for r in response.results)


def test_filters_match_as_kafka() -> None:
    literal = StandardAcl(Res.TOPIC, "orders", Pat.LITERAL, "User:a", "*", Op.READ, Perm.ALLOW)
    wildcard = StandardAcl(Res.TOPIC, "*", Pat.LITERAL, "User:a", "*", Op.READ, Perm.ALLOW)
    prefixed = StandardAcl(Res.TOPIC, "ord", Pat.PREFIXED, "User:a", "*", Op.READ, Perm.ALLOW)
    group = StandardAcl(Res.GROUP, "orders", Pat.LITERAL, "User:b", "h", Op.READ, Perm.DENY)
    every = [literal, wildcard, prefixed, group]

    def matched(f: AclFilter) -> list[StandardAcl]:
        return [a for a in every if f.matches(a)]

    assert matched(AclFilter()) == every
    assert matched(AclFilter(Res.TOPIC, "orders", Pat.LITERAL)) == [literal]
    assert matched(AclFilter(Res.TOPIC, "ord", Pat.PREFIXED)) == [prefixed]
    assert matched(AclFilter(Res.ANY, "orders", Pat.ANY)) == [literal, group]
    assert matched(AclFilter(Res.TOPIC, "orders", Pat.MATCH)) == [literal, wildcard, prefixed]
    assert matched(AclFilter(Res.TOPIC, "x", Pat.MATCH)) == [wildcard]
    assert matched(AclFilter(principal="User:b")) == [group]
    assert matched(AclFilter(host="h", permission_type=Perm.DENY)) == [group]
    assert matched(AclFilter(operation=Op.WRITE)) == []


def test_delete_acls_removes_every_match_and_reports_per_filter() -> None:
    image = image_with(creation("orders"), creation("orders", principal="User:bob"),
                       creation("pay-", Pat.PREFIXED))
    request = DeleteAclsRequestData(filters=[
        wire_filter(resource_type_filter=Res.TOPIC, resource_name_filter="orders",
                    pattern_type_filter=Pat.LITERAL),
        wire_filter(principal_filter="User:bob"),
        wire_filter(resource_type_filter=Res.GROUP)])
    records, response = delete_acls(image, request, 0)
    results = response.filter_results
    assert [len(r.matching_acls) for r in results] == [2, 1, 0]
    assert results[1].matching_acls[0].principal == "User:bob"
    assert len(records) == 2 and all(isinstance(r, RemoveAccessControlEntryRecord) for r in records)
    image = commit(image, records)
    assert [a.resource_name for a in image.acls] == ["pay-"]


def test_delete_acls_refuses_an_unknown_filter_value() -> None:
    image = image_with(creation("orders"))
    records, response = delete_acls(image, DeleteAclsRequestData(filters=[wire_filter(operation=0)]), 0)
    assert records == []
    assert response.filter_results[0].error_code == ErrorCode.INVALID_REQUEST


def test_acls_survive_a_snapshot_round_trip() -> None:
    image = image_with(creation("orders"), creation("pay-", Pat.PREFIXED, op=Op.ALL))
    rebuilt = commit(MetadataImage.empty(), image.to_records())
    assert rebuilt.acls == image.acls
    assert rebuilt.acls.by_id.keys() == image.acls.by_id.keys()
