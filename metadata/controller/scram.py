"""AlterUserScramCredentials (KIP-554) decided against the image, and the describe answer.

A client sends the salted password (PBKDF2, RFC 5802's Hi); the controller derives
StoredKey and ServerKey from it and records only those, with the salt and iteration count.
Both APIs' responses, error answers included, are defined here once.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from clients.protocol import ErrorCode
from clients.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequestData,
    AlterUserScramCredentialsResponseData,
)
from clients.protocol.messages.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequestData,
    DescribeUserScramCredentialsResponseData,
)
from metadata.controller.rejection import error_text
from metadata.image import MetadataImage
from metadata.records import MetadataRecord
from metadata.scram import (
    MAX_ITERATIONS,
    MECHANISM_NAMES,
    MIN_ITERATIONS,
    RemoveUserScramCredentialRecord,
    ScramCredential,
)

logger = logging.getLogger(__name__)

_HASHES = {1: hashlib.sha256, 2: hashlib.sha512}

AlterResult = AlterUserScramCredentialsResponseData.AlterUserScramCredentialsResult
DescribeResult = DescribeUserScramCredentialsResponseData.DescribeUserScramCredentialsResult
CredentialInfo = DescribeUserScramCredentialsResponseData.CredentialInfo
Upsertion = AlterUserScramCredentialsRequestData.ScramCredentialUpsertion


def alter_user_scram_credentials_error(body: AlterUserScramCredentialsRequestData, version: int,
                                       code: int, message: str | None = None
                                       ) -> AlterUserScramCredentialsResponseData:
    """Every user the request names, once, with `code`."""
    users = dict.fromkeys(e.name for e in [*body.deletions, *body.upsertions])
    text = error_text(code, message)
    return AlterUserScramCredentialsResponseData(results=[
        AlterResult(user=user, error_code=code, error_message=text) for user in users])


def describe_user_scram_credentials_error(body: DescribeUserScramCredentialsRequestData,
                                          version: int, code: int, message: str | None = None
                                          ) -> DescribeUserScramCredentialsResponseData:
    """The top-level `code` and no results."""
    return DescribeUserScramCredentialsResponseData(error_code=code,
                                                    error_message=error_text(code, message))


def credential_from_salted_password(mechanism: int, salt: bytes, salted_password: bytes,
                                    iterations: int) -> ScramCredential:
    """RFC 5802: ClientKey = HMAC(SaltedPassword, "Client Key"), StoredKey = H(ClientKey),
    ServerKey = HMAC(SaltedPassword, "Server Key")."""
    digest = _HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    server_key = hmac.new(salted_password, b"Server Key", digest).digest()
    return ScramCredential(salt, digest(client_key).digest(), server_key, iterations)


def _check_upsertion(entry: Upsertion) -> tuple[int, str] | None:
    if entry.mechanism not in MECHANISM_NAMES:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    if entry.iterations < MIN_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if entry.iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    if not entry.salt or not entry.salted_password:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty"
    return None


def alter_user_scram_credentials(image: MetadataImage,
                                 request: AlterUserScramCredentialsRequestData, now_ms: int
                                 ) -> tuple[list[MetadataRecord],
                                            AlterUserScramCredentialsResponseData]:
    """AlterUserScramCredentialsRequest -> records + response (one result per user)."""
    deletions, upsertions = request.deletions, request.upsertions
    errors: dict[str, tuple[int, str]] = {}
    seen: set[tuple[str, int]] = set()
    users: list[str] = []
    for entry in [*deletions, *upsertions]:
        name, mechanism = entry.name, entry.mechanism
        if name not in users:
            users.append(name)
        if (name, mechanism) in seen:
            errors.setdefault(name, (ErrorCode.DUPLICATE_RESOURCE,
                                     "A user credential cannot be altered twice in the "
                                     "same request"))
        seen.add((name, mechanism))
        if not name:
            errors.setdefault(name, (ErrorCode.UNACCEPTABLE_CREDENTIAL,
                                     "Username must not be empty"))
    for entry in deletions:
        name, mechanism = entry.name, entry.mechanism
        if mechanism not in MECHANISM_NAMES:
            errors.setdefault(name, (ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                     "Unknown SCRAM mechanism"))
        elif (name, mechanism) not in image.scram_credentials:
            errors.setdefault(name, (ErrorCode.RESOURCE_NOT_FOUND,
                                     "Attempt to delete a user credential that does not "
                                     "exist"))
    for entry in upsertions:
        problem = _check_upsertion(entry)
        if problem is not None:
            errors.setdefault(entry.name, problem)
    records: list[MetadataRecord] = []
    for entry in deletions:
        if entry.name not in errors:
            records.append(RemoveUserScramCredentialRecord(entry.name, entry.mechanism))
    for upsertion in upsertions:
        if upsertion.name not in errors:
            credential = credential_from_salted_password(
                upsertion.mechanism, bytes(upsertion.salt), bytes(upsertion.salted_password),
                upsertion.iterations)
            records.append(credential.to_record(upsertion.name, upsertion.mechanism))
    if records:
        logger.info("altering SCRAM credentials of %d user(s)",
                    len({r.name for r in records}))
    results = [AlterResult(user=name, error_code=errors.get(name, (0, None))[0],
                           error_message=errors.get(name, (0, None))[1]) for name in users]
    return records, AlterUserScramCredentialsResponseData(results=results)


def describe_user_scram_credentials(image: MetadataImage,
                                    request: DescribeUserScramCredentialsRequestData
                                    ) -> DescribeUserScramCredentialsResponseData:
    """DescribeUserScramCredentialsResponse: mechanisms and iterations, never keys."""
    by_user: dict[str, list[CredentialInfo]] = {}
    for (name, mechanism), credential in sorted(image.scram_credentials.items()):
        by_user.setdefault(name, []).append(CredentialInfo(mechanism=mechanism,
                                                           iterations=credential.iterations))
    if not request.users:
        return DescribeUserScramCredentialsResponseData(
            error_code=0, error_message=None,
            results=[DescribeResult(user=name, error_code=0, error_message=None,
                                    credential_infos=infos) for name, infos in by_user.items()])
    names = [u.name for u in request.users]
    results = []
    for name in dict.fromkeys(names):
        if names.count(name) > 1:
            results.append(DescribeResult(
                user=name, error_code=ErrorCode.DUPLICATE_RESOURCE,
                error_message="Cannot describe SCRAM credentials for the same user twice in "
                              "a single request"))
        elif name not in by_user:
            results.append(DescribeResult(
                user=name, error_code=ErrorCode.RESOURCE_NOT_FOUND,
                error_message="Attempt to describe a user credential that does not exist"))
        else:
            results.append(DescribeResult(user=name, error_code=0, error_message=None,
                                          credential_infos=by_user[name]))
    return DescribeUserScramCredentialsResponseData(error_code=0, error_message=None,
                                                    results=results)
