"""HTTP basic auth for the console: an ASGI middleware and its password file."""

from __future__ import annotations

import base64
import binascii
import hmac
from pathlib import Path
from typing import Any, Awaitable, Callable, Mapping

from clients.manager.bind import ManagerConfigError

Scope = dict[str, Any]
ASGIApp = Callable[[Scope, Callable[..., Awaitable[Any]], Callable[..., Awaitable[Any]]],
                   Awaitable[None]]


def read_password_file(path: str) -> dict[str, str]:
    """``USER:PASSWORD`` lines (blank lines and ``#`` comments ignored) as {user: password}."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ManagerConfigError(f"--password-file {path}: {exc.strerror}") from None
    users: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, password = line.partition(":")
        if not sep or not user or not password:
            raise ManagerConfigError(
                f"--password-file {path} line {number}: expected USER:PASSWORD")
        users[user] = password
    if not users:
        raise ManagerConfigError(f"--password-file {path}: no USER:PASSWORD line")
    return users


def credentials_match(header: str | None, users: Mapping[str, str]) -> bool:
    """Whether an Authorization header carries one of ``users``' credentials."""
    if not header or not header.lower().startswith("basic "):
        return False
    try:
        decoded = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    user, _, password = decoded.partition(":")
    expected = users.get(user)
    # compare_digest on bytes: its time does not depend on where the strings differ.
    return expected is not None and hmac.compare_digest(expected.encode(), password.encode())


class BasicAuth:
    """Answers 401 with a basic-auth challenge to any HTTP request without valid
    credentials."""

    def __init__(self, app: ASGIApp, users: Mapping[str, str]) -> None:
        self.app = app
        self.users = dict(users)

    async def __call__(self, scope: Scope, receive: Callable[..., Awaitable[Any]],
                       send: Callable[..., Awaitable[Any]]) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or ())
            header = headers.get(b"authorization")
            if not credentials_match(header.decode("latin-1") if header else None, self.users):
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"www-authenticate", b'Basic realm="raftka manager", charset="UTF-8"'),
                    (b"content-type", b"text/plain; charset=utf-8")]})
                await send({"type": "http.response.body", "body": b"401 Unauthorized\n"})
                return
        await self.app(scope, receive, send)
