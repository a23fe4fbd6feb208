"""AlterUserScramCredentials (KIP-554) decided against the image, and the describe answer.

A client sends the salted password (PBKDF2, RFC 5802's Hi); the controller derives
StoredKey and ServerKey from it and records only those, with the salt and iteration count.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from typing import Any, Mapping

from clients.protocol import ErrorCode
from metadata.controller import Decision
from metadata.image import MetadataImage
from metadata.records import MetadataRecord
from metadata.scram import (
    MAX_ITERATIONS,
    MECHANISM_NAMES,
    MIN_ITERATIONS,
    RemoveUserScramCredentialRecord,
    ScramCredential,
    UserScramCredentialRecord,
)

logger = logging.getLogger(__name__)

_HASHES = {1: hashlib.sha256, 2: hashlib.sha512}


def credential_from_salted_password(mechanism: int, salt: bytes, salted_password: bytes,
                                    iterations: int) -> ScramCredential:
    """RFC 5802: ClientKey = HMAC(SaltedPassword, "Client Key"), StoredKey = H(ClientKey),
    ServerKey = HMAC(SaltedPassword, "Server Key")."""
    digest = _HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    server_key = hmac.new(salted_password, b"Server Key", digest).digest()
    return ScramCredential(salt, digest(client_key).digest(), server_key, iterations)


def _check_upsertion(entry: Mapping[str, Any]) -> tuple[int, str] | None:
    mechanism = entry.get("mechanism")
    if mechanism not in MECHANISM_NAMES:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    iterations = int(entry.get("iterations") or 0)
    if iterations < MIN_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    if not entry.get("salt") or not entry.get("salted_password"):
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty"
    return None


def alter_user_scram_credentials(image: MetadataImage, request: Mapping[str, Any],
                                 now_ms: int) -> Decision:
    """AlterUserScramCredentialsRequest -> records + response (one result per user)."""
    deletions = list(request.get("deletions") or ())
    upsertions = list(request.get("upsertions") or ())
    errors: dict[str, tuple[int, str]] = {}
    seen: set[tuple[str, int]] = set()
    users: list[str] = []
    for entry in deletions + upsertions:
        name, mechanism = str(entry.get("name") or ""), entry.get("mechanism")
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
        name, mechanism = str(entry.get("name") or ""), entry.get("mechanism")
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
            errors.setdefault(str(entry.get("name") or ""), problem)
    records: list[MetadataRecord] = []
    for entry in deletions:
        name = str(entry["name"])
        if name not in errors:
            records.append(RemoveUserScramCredentialRecord(name, int(entry["mechanism"])))
    for entry in upsertions:
        name = str(entry["name"])
        if name not in errors:
            mechanism = int(entry["mechanism"])
            credential = credential_from_salted_password(
                mechanism, bytes(entry["salt"]), bytes(entry["salted_password"]),
                int(entry["iterations"]))
            records.append(credential.to_record(name, mechanism))
    if records:
        logger.info("altering SCRAM credentials of %d user(s)",
                    len({r.name for r in records}))
    results = [{"user": name, "error_code": errors.get(name, (0, None))[0],
                "error_message": errors.get(name, (0, None))[1]} for name in users]
    return records, {"throttle_time_ms": 0, "results": results}


def describe_user_scram_credentials(image: MetadataImage,
                                    request: Mapping[str, Any]) -> dict[str, Any]:
    """DescribeUserScramCredentialsResponse: mechanisms and iterations, never keys."""
    by_user: dict[str, list[dict[str, int]]] = {}
    for (name, mechanism), credential in sorted(image.scram_credentials.items()):
        by_user.setdefault(name, []).append({"mechanism": mechanism,
                                             "iterations": credential.iterations})
    wanted = request.get("users")
    if not wanted:
        results = [{"user": name, "error_code": 0, "error_message": None,
                    "credential_infos": infos} for name, infos in by_user.items()]
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
                "results": results}
    names = [str(u.get("name") or "") for u in wanted]
    results = []
    for name in dict.fromkeys(names):
        if names.count(name) > 1:
            results.append({"user": name, "error_code": ErrorCode.DUPLICATE_RESOURCE,
                            "error_message": "Cannot describe SCRAM credentials for the "
                                             "same user twice in a single request",
                            "credential_infos": []})
        elif name not in by_user:
            results.append({"user": name, "error_code": ErrorCode.RESOURCE_NOT_FOUND,
                            "error_message": "Attempt to describe a user credential that "
                                             "does not exist",
                            "credential_infos": []})
        else:
            results.append({"user": name, "error_code": 0, "error_message": None,
                            "credential_infos": by_user[name]})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": results}


# For UserScramCredentialRecord users (type check aid).
__all__ = ["alter_user_scram_credentials", "describe_user_scram_credentials",
           "credential_from_salted_password", "UserScramCredentialRecord"]
