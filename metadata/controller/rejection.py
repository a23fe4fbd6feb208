"""The exception a decision raises to refuse one item of a request, and the text an error
entry carries."""

from __future__ import annotations

from clients.protocol import ErrorCode


def error_text(code: int, message: str | None) -> str:
    """`message`, or Kafka's default message of `code` when there is none."""
    return message if message is not None else ErrorCode.from_code(code).message


class Rejected(Exception):
    """One request item refused with a Kafka error `code`; the decision reports it in that
    item's response entry and goes on with the others."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
