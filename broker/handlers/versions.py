"""Fitting version-neutral body dicts to one API version's schema."""

from __future__ import annotations

from typing import Any

from clients.protocol import APIS
from clients.protocol.schema import Array, Field, Struct, in_versions


def fit_response(api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    """`body` (a response decoded at some version) with only the fields `version` has.

    The broker relays controller answers decoded at the version it spoke to the controller;
    the client may have asked in an older version, whose schema lacks some of those fields."""
    return _fit(APIS[api_key].response, version, body)  # type: ignore[index]


def _fit(fields: tuple[Field, ...], version: int, body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in fields:
        if field.name not in body or not in_versions(field.versions, version):
            continue
        value = body[field.name]
        ftype = field.type
        if value is not None:
            if isinstance(ftype, Array) and isinstance(ftype.of, Struct):
                value = [_fit(ftype.of.fields, version, item) for item in value]
            elif isinstance(ftype, Struct):
                value = _fit(ftype.fields, version, value)
        out[field.name] = value
    return out
