"""Interceptors (``interceptor.classes``), as Kafka's clients run them.

An interceptor is any object with some of Kafka's methods: producer side
``on_send(record) -> record`` and ``on_acknowledgement(metadata, error)``, consumer side
``on_consume(records) -> records`` and ``on_commit(offsets)``; ``close()`` on both. As in
Kafka, an interceptor that raises is logged and skipped, never failing the record.
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

logger = logging.getLogger(__name__)

_METHODS = ("on_send", "on_acknowledgement", "on_consume", "on_commit")


def parse_interceptors(value: Any) -> tuple[Any, ...]:
    """``interceptor.classes``: interceptor objects, or classes built without arguments."""
    items = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for item in items:
        instance = item() if isinstance(item, type) else item
        if not any(callable(getattr(instance, m, None)) for m in _METHODS):
            raise ValueError(f"{type(instance).__name__} has none of the interceptor "
                             f"methods {', '.join(_METHODS)}")
        out.append(instance)
    return tuple(out)


def chain(interceptors: Sequence[Any], method: str, value: Any) -> Any:
    """Pass ``value`` through each interceptor's ``method`` in order (on_send,
    on_consume); a failing interceptor leaves the value as it was."""
    for interceptor in interceptors:
        fn = getattr(interceptor, method, None)
        if fn is None:
            continue
        try:
            value = fn(value)
        except Exception:
            logger.exception("interceptor %r %s failed", interceptor, method)
    return value


def notify(interceptors: Sequence[Any], method: str, *args: Any) -> None:
    """Call each interceptor's ``method`` (on_acknowledgement, on_commit, close)."""
    for interceptor in interceptors:
        fn = getattr(interceptor, method, None)
        if fn is None:
            continue
        try:
            fn(*args)
        except Exception:
            logger.exception("interceptor %r %s failed", interceptor, method)


__all__ = ["chain", "notify", "parse_interceptors"]
