"""Small helpers the data-plane handlers share."""

from __future__ import annotations

import time

from broker.log.errors import LogError
from broker.replica.errors import ReplicaError
from clients.protocol import ErrorCode


def now_ms() -> int:
    return int(time.time() * 1000)


def error_code_of(exc: BaseException) -> int:
    """The Kafka error code for a log or replica error (UNKNOWN_SERVER_ERROR otherwise)."""
    if isinstance(exc, (LogError, ReplicaError)):
        return int(exc.error_code)
    return int(ErrorCode.UNKNOWN_SERVER_ERROR)


# Failures a handler answers per partition; anything else is a bug and propagates.
PARTITION_ERRORS = (LogError, ReplicaError)
