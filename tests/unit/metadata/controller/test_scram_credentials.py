"""SCRAM credentials in the metadata: AlterUserScramCredentials decisions, the image after
replay and in snapshots, and the describe answer (never keys)."""

from __future__ import annotations

import hashlib

import scramp

from typing import Any

from clients.protocol import ApiKey, ErrorCode
from metadata.controller.scram import (
    AlterResult,
    CredentialInfo,
    DescribeResult,
    alter_user_scram_credentials,
    credential_from_salted_password,
    describe_user_scram_credentials,
)
from metadata.delta import apply_records
from metadata.image import MetadataImage
from metadata.scram import RemoveUserScramCredentialRecord, UserScramCredentialRecord
from tests.unit.metadata.controller.harness import typed

SALT = b"0123456789abcdef"


def upsertion(name: str, mechanism: int = 2, password: str = "pw",
              iterations: int = 4096) -> dict:
    digest = "sha512" if mechanism == 2 else "sha256"
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": SALT,
            "salted_password": hashlib.pbkdf2_hmac(digest, password.encode(), SALT,
                                                   iterations)}


def alter(image: MetadataImage, request: dict) -> tuple[list, Any]:
    return alter_user_scram_credentials(
        image, typed(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, request), 0)


def describe(image: MetadataImage, request: dict) -> Any:
    return describe_user_scram_credentials(
        image, typed(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, request))


def apply(image: MetadataImage, request: dict) -> tuple[MetadataImage, Any]:
    records, response = alter(image, request)
    return apply_records(image, records)[1], response


def test_the_derived_keys_are_the_ones_scramp_makes_from_the_password() -> None:
    salt, stored, server, _ = scramp.ScramMechanism("SCRAM-SHA-512").make_auth_info(
        "pw", iteration_count=4096, salt=SALT)
    salted = hashlib.pbkdf2_hmac("sha512", b"pw", SALT, 4096)
    credential = credential_from_salted_password(2, SALT, salted, 4096)
    assert (credential.stored_key, credential.server_key) == (stored, server)


def test_upsert_then_delete_through_the_image_and_a_snapshot() -> None:
    image, response = apply(MetadataImage(), {"deletions": [], "upsertions": [
        upsertion("alice"), upsertion("alice", 1), upsertion("bob")]})
    assert response.results == [AlterResult(user="alice", error_code=0, error_message=None),
                                AlterResult(user="bob", error_code=0, error_message=None)]
    assert set(image.scram_credentials) == {("alice", 2), ("alice", 1), ("bob", 2)}
    rebuilt = apply_records(MetadataImage(), image.to_records())[1]
    assert rebuilt.scram_credentials == image.scram_credentials
    image, response = apply(image, {"deletions": [{"name": "alice", "mechanism": 1}],
                                    "upsertions": []})
    assert response.results[0].error_code == 0
    assert set(image.scram_credentials) == {("alice", 2), ("bob", 2)}


def test_refusals_write_nothing_for_that_user() -> None:
    image, _ = apply(MetadataImage(), {"deletions": [], "upsertions": [upsertion("alice")]})
    records, response = alter(image, {
        "deletions": [{"name": "ghost", "mechanism": 2}, {"name": "alice", "mechanism": 7}],
        "upsertions": [upsertion("low", iterations=100), upsertion("high", iterations=20000),
                       upsertion("twice"), upsertion("twice"), upsertion(""),
                       upsertion("ok")]})
    codes = {r.user: r.error_code for r in response.results}
    assert codes == {"ghost": ErrorCode.RESOURCE_NOT_FOUND,
                     "alice": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                     "low": ErrorCode.UNACCEPTABLE_CREDENTIAL,
                     "high": ErrorCode.UNACCEPTABLE_CREDENTIAL,
                     "twice": ErrorCode.DUPLICATE_RESOURCE,
                     "": ErrorCode.UNACCEPTABLE_CREDENTIAL, "ok": 0}
    assert [(type(r), r.name) for r in records] == [(UserScramCredentialRecord, "ok")]


def test_describe_lists_mechanisms_and_iterations_only() -> None:
    image, _ = apply(MetadataImage(), {"deletions": [], "upsertions": [
        upsertion("alice", iterations=8192), upsertion("bob", 1)]})
    everyone = describe(image, {"users": None})
    assert everyone.results == [
        DescribeResult(user="alice", error_code=0, error_message=None,
                       credential_infos=[CredentialInfo(mechanism=2, iterations=8192)]),
        DescribeResult(user="bob", error_code=0, error_message=None,
                       credential_infos=[CredentialInfo(mechanism=1, iterations=4096)])]
    some = describe(image, {"users": [{"name": "bob"}, {"name": "nobody"}]})
    assert [(r.user, r.error_code) for r in some.results] == [
        ("bob", 0), ("nobody", ErrorCode.RESOURCE_NOT_FOUND)]


def test_records_never_show_keys_in_their_repr() -> None:
    record = UserScramCredentialRecord("alice", 2, b"salt-bytes", b"stored-key", b"server-key",
                                       4096)
    assert "stored-key" not in repr(record) and "salt-bytes" not in repr(record)
    assert "alice" in repr(RemoveUserScramCredentialRecord("alice", 2))
