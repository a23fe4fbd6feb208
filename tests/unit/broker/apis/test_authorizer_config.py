"""authorizer.class.name, super.users and allow.everyone.if.no.acl.found as a node reads them."""

from __future__ import annotations

import pytest

from broker.apis.authorization import authorizer_from_config
from tests.unit.broker.config.test_server_config import config


def test_unset_means_no_authorization() -> None:
    assert authorizer_from_config(config()) is None


@pytest.mark.parametrize("name", ["org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                  "StandardAuthorizer"])
def test_kafkas_and_the_short_name_enable_the_standard_authorizer(name: str) -> None:
    authorizer = authorizer_from_config(config(**{
        "authorizer.class.name": name, "super.users": " User:admin ;User:CN=broker,OU=ops;",
        "allow.everyone.if.no.acl.found": "true"}))
    assert authorizer is not None
    assert authorizer.super_users == {"User:admin", "User:CN=broker,OU=ops"}
    assert authorizer.allow_if_no_acl is True
    assert authorizer_from_config(config(**{"authorizer.class.name": name})).allow_if_no_acl \
        is False


def test_refusal_names_the_error_of_the_resource_type() -> None:
    from types import SimpleNamespace

    from broker.apis.authorization import AclOperation, Authorization, ResourceType
    from clients.protocol import ErrorCode
    from metadata.authorizer import StandardAuthorizer

    ctx = SimpleNamespace(principal="User:ANONYMOUS", peer=("127.0.0.1", 1))
    authz = Authorization(StandardAuthorizer())
    expected = {ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
                ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    for rtype, code in expected.items():
        assert authz.refusal(ctx, AclOperation.WRITE, rtype, "x") == code  # type: ignore[arg-type]
    assert Authorization(None).refusal(ctx, AclOperation.WRITE,  # type: ignore[arg-type]
                                       ResourceType.TRANSACTIONAL_ID, "x") == ErrorCode.NONE
