"""The exception a decision raises to refuse one item of a request."""

from __future__ import annotations


class Rejected(Exception):
    """One request item refused with a Kafka error `code`; the decision reports it in that
    item's response entry and goes on with the others."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
