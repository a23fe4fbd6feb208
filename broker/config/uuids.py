"""Kafka's Uuid text form: 16 bytes as URL-safe base64 without padding (22 characters)."""

from __future__ import annotations

import base64
import uuid

# Kafka reserves 0 (the zero uuid) and 1 (the metadata topic id).
_RESERVED = (0, 1)


def uuid_to_str(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def parse_uuid(text: str) -> uuid.UUID:
    """Parse Kafka's 22-character form; ValueError describing the problem otherwise."""
    if len(text) != 22:
        raise ValueError(f"{text!r} is not a 22-character base64url UUID")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (ValueError, TypeError):
        raise ValueError(f"{text!r} is not valid base64url") from None
    if len(raw) != 16 or uuid_to_str(uuid.UUID(bytes=raw)) != text:
        raise ValueError(f"{text!r} is not a canonical base64url UUID")
    return uuid.UUID(bytes=raw)


def random_uuid() -> uuid.UUID:
    """A random (v4) UUID as Kafka draws them: never reserved, never text starting with '-'."""
    while True:
        value = uuid.uuid4()
        if value.int not in _RESERVED and not uuid_to_str(value).startswith("-"):
            return value


def random_uuid_str() -> str:
    return uuid_to_str(random_uuid())
