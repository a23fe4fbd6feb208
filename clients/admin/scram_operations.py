"""SCRAM credential administration (KIP-554): the admin calls behind `raftka configs
--entity-type users`.

The password never leaves the client: it is salted and iterated here (PBKDF2, RFC 5802's
Hi) and only the salted password is sent, as Kafka's admin client does.
"""

from __future__ import annotations

import hashlib
import os
from typing import Iterable

from clients.admin.operations import Call, Operation, _fixed, _raise_for
from clients.protocol import ApiKey

MECHANISMS = {"SCRAM-SHA-256": (1, "sha256"), "SCRAM-SHA-512": (2, "sha512")}
MECHANISM_NAMES = {mid: name for name, (mid, _) in MECHANISMS.items()}
DEFAULT_ITERATIONS = 4096
SALT_BYTES = 32


def _mechanism(name: str) -> tuple[int, str]:
    try:
        return MECHANISMS[name]
    except KeyError:
        raise ValueError(f"unknown SCRAM mechanism {name!r} (use "
                         f"{' or '.join(MECHANISMS)})") from None


def upsert_scram_credential(user: str, mechanism: str, password: str,
                            iterations: int = DEFAULT_ITERATIONS) -> Operation:
    """Create or replace `user`'s credential for `mechanism`."""
    mechanism_id, digest = _mechanism(mechanism)
    salt = os.urandom(SALT_BYTES)
    salted = hashlib.pbkdf2_hmac(digest, password.encode("utf-8"), salt, iterations)
    body = {"deletions": [], "upsertions": [
        {"name": user, "mechanism": mechanism_id, "iterations": iterations, "salt": salt,
         "salted_password": salted}]}
    response = yield Call(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, _fixed(body))
    for result in response["results"]:
        _raise_for(result["error_code"], result.get("error_message"), f"user {user!r}")
    return None


def delete_scram_credential(user: str, mechanism: str) -> Operation:
    """Remove `user`'s credential for `mechanism`."""
    mechanism_id, _ = _mechanism(mechanism)
    body = {"deletions": [{"name": user, "mechanism": mechanism_id}], "upsertions": []}
    response = yield Call(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, _fixed(body))
    for result in response["results"]:
        _raise_for(result["error_code"], result.get("error_message"), f"user {user!r}")
    return None


def describe_scram_credentials(users: Iterable[str] | None = None) -> Operation:
    """{user: [(mechanism name, iterations), ...]} for `users` (None: every user)."""
    names = None if users is None else [{"name": u} for u in users]
    response = yield Call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, _fixed({"users": names}))
    _raise_for(response["error_code"], response.get("error_message"),
               "DescribeUserScramCredentials")
    described: dict[str, list[tuple[str, int]]] = {}
    for result in response["results"]:
        _raise_for(result["error_code"], result.get("error_message"),
                   f"user {result['user']!r}")
        described[result["user"]] = [
            (MECHANISM_NAMES.get(info["mechanism"], str(info["mechanism"])), info["iterations"])
            for info in result["credential_infos"]]
    return described
