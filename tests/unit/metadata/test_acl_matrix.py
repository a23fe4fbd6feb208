"""The ACL matrix: for principals, hosts and operations, allowed or denied as Kafka's
StandardAuthorizer decides (literal, prefixed and wildcard patterns, DENY over ALLOW,
implied operations, super users, allow.everyone.if.no.acl.found)."""

from __future__ import annotations

import uuid

import pytest

from metadata.acls import (
    CLUSTER_NAME,
    StandardAcl,
    AclImage,
    AclOperation as Op,
    AclPermissionType as Perm,
    PatternType as Pat,
    ResourceType as Res,
)
from metadata.authorizer import StandardAuthorizer, parse_super_users

ALLOW, DENY = Perm.ALLOW, Perm.DENY


def acl(rtype: Res, name: str, principal: str, op: Op, perm: Perm = ALLOW,
        pattern: Pat = Pat.LITERAL, host: str = "*") -> StandardAcl:
    return StandardAcl(rtype, name, pattern, principal, host, op, perm)


def image(*acls: StandardAcl) -> AclImage:
    return AclImage({uuid.uuid4(): a for a in acls})


ACLS = image(
    # alice reads and writes orders; bob may only read it.
    acl(Res.TOPIC, "orders", "User:alice", Op.READ),
    acl(Res.TOPIC, "orders", "User:alice", Op.WRITE),
    acl(Res.TOPIC, "orders", "User:bob", Op.READ),
    # Everything under "payments-" for carol, except payments-secret, denied to all.
    acl(Res.TOPIC, "payments-", "User:carol", Op.ALL, pattern=Pat.PREFIXED),
    acl(Res.TOPIC, "payments-secret", "User:*", Op.READ, DENY),
    # dave may read every topic but is denied audit from one host.
    acl(Res.TOPIC, "*", "User:dave", Op.READ),
    acl(Res.TOPIC, "audit", "User:dave", Op.READ, DENY, host="10.0.0.9"),
    # A group for alice; alter-configs on a topic for erin; a transactional id for frank.
    acl(Res.GROUP, "billing", "User:alice", Op.READ),
    acl(Res.TOPIC, "settings", "User:erin", Op.ALTER_CONFIGS),
    acl(Res.TRANSACTIONAL_ID, "tx-", "User:frank", Op.WRITE, pattern=Pat.PREFIXED),
    acl(Res.CLUSTER, CLUSTER_NAME, "User:gina", Op.CREATE),
    # Denied READ does not deny DESCRIBE (implication widens ALLOW only).
    acl(Res.TOPIC, "ledger", "User:hank", Op.WRITE),
    acl(Res.TOPIC, "ledger", "User:hank", Op.READ, DENY),
    # Only from one host.
    acl(Res.TOPIC, "local", "User:ivy", Op.READ, host="127.0.0.1"),
)

HOST = "127.0.0.1"

MATRIX = [
    # principal, host, operation, resource type, name, allowed
    ("User:alice", HOST, Op.READ, Res.TOPIC, "orders", True),
    ("User:alice", HOST, Op.WRITE, Res.TOPIC, "orders", True),
    ("User:alice", HOST, Op.DESCRIBE, Res.TOPIC, "orders", True),        # READ implies DESCRIBE
    ("User:alice", HOST, Op.DELETE, Res.TOPIC, "orders", False),
    ("User:alice", HOST, Op.DESCRIBE_CONFIGS, Res.TOPIC, "orders", False),
    ("User:bob", HOST, Op.READ, Res.TOPIC, "orders", True),
    ("User:bob", HOST, Op.WRITE, Res.TOPIC, "orders", False),
    ("User:bob", HOST, Op.READ, Res.TOPIC, "orders-archive", False),     # literal is exact
    ("User:mallory", HOST, Op.READ, Res.TOPIC, "orders", False),
    ("User:carol", HOST, Op.WRITE, Res.TOPIC, "payments-eu", True),      # PREFIXED, ALL
    ("User:carol", HOST, Op.ALTER_CONFIGS, Res.TOPIC, "payments-eu", True),
    ("User:carol", HOST, Op.WRITE, Res.TOPIC, "payment", False),         # shorter than prefix
    ("User:carol", HOST, Op.WRITE, Res.TOPIC, "payments-secret", True),  # DENY is READ only
    ("User:carol", HOST, Op.READ, Res.TOPIC, "payments-secret", False),  # DENY over ALLOW
    ("User:carol", HOST, Op.READ, Res.GROUP, "payments-eu", False),      # other resource type
    ("User:dave", HOST, Op.READ, Res.TOPIC, "anything", True),           # wildcard resource
    ("User:dave", HOST, Op.READ, Res.TOPIC, "audit", True),              # deny is another host
    ("User:dave", "10.0.0.9", Op.READ, Res.TOPIC, "audit", False),
    ("User:dave", "10.0.0.9", Op.READ, Res.TOPIC, "orders", True),
    ("User:dave", HOST, Op.WRITE, Res.TOPIC, "anything", False),
    ("User:alice", HOST, Op.READ, Res.GROUP, "billing", True),
    ("User:alice", HOST, Op.DESCRIBE, Res.GROUP, "billing", True),
    ("User:alice", HOST, Op.DELETE, Res.GROUP, "billing", False),
    ("User:bob", HOST, Op.READ, Res.GROUP, "billing", False),
    ("User:erin", HOST, Op.DESCRIBE_CONFIGS, Res.TOPIC, "settings", True),  # implied
    ("User:erin", HOST, Op.DESCRIBE, Res.TOPIC, "settings", False),         # not implied
    ("User:frank", HOST, Op.WRITE, Res.TRANSACTIONAL_ID, "tx-orders", True),
    ("User:frank", HOST, Op.DESCRIBE, Res.TRANSACTIONAL_ID, "tx-orders", True),
    ("User:frank", HOST, Op.WRITE, Res.TRANSACTIONAL_ID, "orders", False),
    ("User:gina", HOST, Op.CREATE, Res.CLUSTER, CLUSTER_NAME, True),
    ("User:gina", HOST, Op.ALTER, Res.CLUSTER, CLUSTER_NAME, False),
    ("User:hank", HOST, Op.DESCRIBE, Res.TOPIC, "ledger", True),
    ("User:hank", HOST, Op.READ, Res.TOPIC, "ledger", False),
    ("User:ivy", HOST, Op.READ, Res.TOPIC, "local", True),
    ("User:ivy", "192.168.1.5", Op.READ, Res.TOPIC, "local", False),
    # No ACL covers the resource: denied by default.
    ("User:alice", HOST, Op.READ, Res.TOPIC, "unprotected", False),
    ("User:alice", HOST, Op.DESCRIBE, Res.CLUSTER, CLUSTER_NAME, False),
]


@pytest.mark.parametrize(("principal", "host", "op", "rtype", "name", "expected"), MATRIX,
                         ids=[f"{p}-{h}-{o.name}-{r.name}:{n}" for p, h, o, r, n, _ in MATRIX])
def test_matrix(principal: str, host: str, op: Op, rtype: Res, name: str,
                expected: bool) -> None:
    authorizer = StandardAuthorizer()
    assert authorizer.authorize(ACLS, principal, host, op, rtype, name) is expected


def test_wildcard_principal_and_all_operations() -> None:
    acls = image(acl(Res.TOPIC, "public", "User:*", Op.ALL))
    authorizer = StandardAuthorizer()
    for op in (Op.READ, Op.WRITE, Op.DESCRIBE, Op.DELETE, Op.ALTER_CONFIGS):
        assert authorizer.authorize(acls, "User:anyone", HOST, op, Res.TOPIC, "public")
    assert not authorizer.authorize(acls, "User:anyone", HOST, Op.READ, Res.TOPIC, "private")


def test_deny_all_beats_every_allow() -> None:
    acls = image(acl(Res.TOPIC, "t", "User:a", Op.ALL),
                 acl(Res.TOPIC, "t", "User:a", Op.READ),
                 acl(Res.TOPIC, "t", "User:*", Op.ALL, DENY, pattern=Pat.PREFIXED))
    assert not StandardAuthorizer().authorize(acls, "User:a", HOST, Op.READ, Res.TOPIC, "t")


def test_super_users_may_do_anything_despite_deny() -> None:
    acls = image(acl(Res.TOPIC, "*", "User:*", Op.ALL, DENY))
    authorizer = StandardAuthorizer(super_users=parse_super_users(" User:admin ; User:broker"))
    assert authorizer.authorize(acls, "User:admin", HOST, Op.DELETE, Res.TOPIC, "x")
    assert authorizer.authorize(acls, "User:broker", HOST, Op.CLUSTER_ACTION, Res.CLUSTER,
                                CLUSTER_NAME)
    assert not authorizer.authorize(acls, "User:alice", HOST, Op.READ, Res.TOPIC, "x")


def test_super_users_parsing_rejects_a_name_without_type() -> None:
    with pytest.raises(ValueError, match="alice"):
        parse_super_users("User:admin;alice")


def test_allow_everyone_if_no_acl_found_applies_only_where_no_acl_covers() -> None:
    authorizer = StandardAuthorizer(allow_if_no_acl=True)
    # Any ACL on the resource (for anyone) takes the default away.
    acls = image(acl(Res.TOPIC, "owned", "User:alice", Op.READ),
                 acl(Res.TOPIC, "team-", "User:alice", Op.READ, pattern=Pat.PREFIXED))
    assert authorizer.authorize(acls, "User:bob", HOST, Op.WRITE, Res.TOPIC, "free")
    assert not authorizer.authorize(acls, "User:bob", HOST, Op.READ, Res.TOPIC, "owned")
    assert not authorizer.authorize(acls, "User:bob", HOST, Op.READ, Res.TOPIC, "team-x")
    assert authorizer.authorize(acls, "User:bob", HOST, Op.READ, Res.GROUP, "owned")


def test_authorize_by_resource_type() -> None:
    authorizer = StandardAuthorizer()
    acls = image(acl(Res.TOPIC, "logs-", "User:a", Op.WRITE, pattern=Pat.PREFIXED),
                 acl(Res.TOPIC, "logs-", "User:b", Op.WRITE, pattern=Pat.PREFIXED),
                 acl(Res.TOPIC, "log", "User:b", Op.WRITE, DENY, pattern=Pat.PREFIXED),
                 acl(Res.TOPIC, "x", "User:c", Op.WRITE),
                 acl(Res.TOPIC, "x", "User:c", Op.WRITE, DENY))
    assert authorizer.authorize_by_resource_type(acls, "User:a", HOST, Op.WRITE, Res.TOPIC)
    assert not authorizer.authorize_by_resource_type(acls, "User:b", HOST, Op.WRITE, Res.TOPIC)
    assert not authorizer.authorize_by_resource_type(acls, "User:c", HOST, Op.WRITE, Res.TOPIC)
    assert not authorizer.authorize_by_resource_type(acls, "User:d", HOST, Op.WRITE, Res.TOPIC)


def test_authorized_operations_bit_field() -> None:
    acls = image(acl(Res.TOPIC, "t", "User:a", Op.READ), acl(Res.TOPIC, "t", "User:a", Op.ALTER_CONFIGS))
    bits = StandardAuthorizer().authorized_operations(acls, "User:a", HOST, Res.TOPIC, "t")
    assert bits == (1 << Op.READ) | (1 << Op.DESCRIBE) | (1 << Op.ALTER_CONFIGS) | \
        (1 << Op.DESCRIBE_CONFIGS)


def test_decision_looks_up_the_resource_not_every_acl() -> None:
    """10,000 unrelated ACLs: a decision touches only the ACLs covering the resource."""
    many = {uuid.uuid4(): acl(Res.TOPIC, f"t{i}", "User:a", Op.READ) for i in range(10_000)}
    many.update({uuid.uuid4(): acl(Res.TOPIC, f"p{i}-", "User:a", Op.READ, pattern=Pat.PREFIXED)
                 for i in range(100)})
    acls = AclImage(many)
    covering = list(acls.applicable(Res.TOPIC, "p7-orders"))
    assert [a.resource_name for a in covering] == ["p7-"]
    assert list(acls.applicable(Res.TOPIC, "t42")) == [acl(Res.TOPIC, "t42", "User:a", Op.READ)]
