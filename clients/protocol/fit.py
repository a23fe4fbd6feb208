"""Fitting version-neutral body dicts to one API version's schema.

A body may carry the fields of several versions (an old and a new shape side by side);
the codec refuses a field set to a non-default value where the version lacks it. These
helpers keep only the fields ``version`` has, in nested structs and arrays of structs too.
"""

from __future__ import annotations

from typing import Any, Mapping

from clients.protocol.schemas import APIS
from clients.protocol.schema import Array, Field, Struct, in_versions


def fit_body(fields: tuple[Field, ...], version: int, body: Mapping[str, Any]
             ) -> dict[str, Any]:
    """``body`` with only the fields of ``fields`` that ``version`` has."""
    out: dict[str, Any] = {}
    for field in fields:
        if field.name not in body or not in_versions(field.versions, version):
            continue
        value = body[field.name]
        ftype = field.type
        if value is not None:
            if isinstance(ftype, Array) and isinstance(ftype.of, Struct):
                value = [fit_body(ftype.of.fields, version, item) for item in value]
            elif isinstance(ftype, Struct):
                value = fit_body(ftype.fields, version, value)
        out[field.name] = value
    return out


def fit_request(api_key: int, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
    """A request ``body`` with only the fields request ``version`` of ``api_key`` has."""
    return fit_body(APIS[api_key].request, version, body)  # type: ignore[index]


def fit_response(api_key: int, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
    """A response ``body`` (decoded at some version) with only the fields ``version`` has."""
    return fit_body(APIS[api_key].response, version, body)  # type: ignore[index]


__all__ = ["fit_body", "fit_request", "fit_response"]
