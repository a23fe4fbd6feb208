"""kafka-python's message classes (built from Kafka's JSON definitions, not from ours): an
independent encoder and decoder to check our frames against."""

from __future__ import annotations

from typing import Any

import pytest

kafka = pytest.importorskip("kafka")
from kafka.protocol.api_message import ApiMessage  # noqa: E402

# Importing the packages registers every request and response class.
import kafka.protocol.admin  # noqa: E402,F401
import kafka.protocol.consumer  # noqa: E402,F401
import kafka.protocol.metadata  # noqa: E402,F401
import kafka.protocol.producer  # noqa: E402,F401


def message_classes() -> tuple[dict[int, type], dict[int, type]]:
    """kafka-python's primary request and response classes by API key."""
    requests: dict[int, type] = {}
    responses: dict[int, type] = {}
    pending = list(ApiMessage.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is not None or getattr(cls, "_json", None) is None:
            continue
        (requests if cls.is_request() else responses)[cls.API_KEY] = cls
    return requests, responses


def build(container: type, values: dict[str, Any]) -> Any:
    """A kafka-python data container from nested dicts keyed by Kafka's snake_case names."""
    fields = container._struct.fields
    kwargs = {}
    for name, value in values.items():
        field = fields[name]
        if value is not None and field.is_struct_array():
            value = [build(field.data_class, item) for item in value]
        elif value is not None and field.is_struct():
            value = build(field.data_class, value)
        kwargs[name] = value
    return container(**kwargs)
