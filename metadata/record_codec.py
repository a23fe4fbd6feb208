"""msgpack encoding of metadata records as `[api_key, version, {field: value}]`.

UUIDs travel as 16 raw bytes, tuples as arrays, nested structs as maps. Decoding checks
every field's type, so a corrupt or foreign payload raises `MetadataRecordError` instead of
producing a half-valid record.
"""

from __future__ import annotations

import dataclasses
import types
import typing
import uuid
from collections.abc import Callable
from functools import cache
from typing import Any

import msgpack

from metadata.errors import MetadataRecordError
from metadata.records import RECORD_CLASS_BY_API_KEY, MetadataRecord

_Encoder = Callable[[Any], Any]
_Decoder = Callable[[Any], Any]


def encode_record(record: MetadataRecord) -> bytes:
    """Serialize one metadata record."""
    cls = type(record)
    if RECORD_CLASS_BY_API_KEY.get(getattr(cls, "API_KEY", -1)) is not cls:
        raise MetadataRecordError(f"not a metadata record: {cls.__name__}")
    return msgpack.packb([cls.API_KEY, cls.VERSION, _struct_codec(cls)[0](record)], use_bin_type=True)


def decode_record(data: bytes) -> MetadataRecord:
    """Parse bytes produced by `encode_record`; raises MetadataRecordError on bad input."""
    try:
        obj = msgpack.unpackb(data, raw=False, strict_map_key=True, use_list=True)
    except (ValueError, msgpack.UnpackException, TypeError) as exc:
        raise MetadataRecordError(f"undecodable metadata record: {exc}") from exc
    if not (isinstance(obj, list) and len(obj) == 3):
        raise MetadataRecordError("metadata record must be [type, version, fields]")
    api_key, version, fields = obj
    cls = RECORD_CLASS_BY_API_KEY.get(api_key) if type(api_key) is int else None
    if cls is None:
        raise MetadataRecordError(f"unknown metadata record type {api_key!r}")
    if type(version) is not int or not 0 <= version <= cls.VERSION:
        raise MetadataRecordError(f"unsupported version {version!r} of {cls.__name__}")
    return _struct_codec(cls)[1](fields, version)


@cache
def _struct_codec(cls: type) -> tuple[_Encoder, _Decoder]:
    hints = typing.get_type_hints(cls)
    codecs = {f.name: _value_codec(hints[f.name]) for f in dataclasses.fields(cls)}
    # Every field of the stored version is written, so every one must be there; the fields
    # added since (FIELDS_SINCE) take their defaults when the record is of an older version.
    since: dict[str, int] = getattr(cls, "FIELDS_SINCE", {})

    def encode(obj: Any) -> dict[str, Any]:
        return {name: enc(getattr(obj, name)) for name, (enc, _) in codecs.items()}

    def decode(raw: Any, version: int = 0) -> Any:
        if not isinstance(raw, dict):
            raise MetadataRecordError(f"{cls.__name__}: fields must be a map")
        unknown = raw.keys() - codecs.keys()
        if unknown:
            raise MetadataRecordError(f"{cls.__name__}: unknown fields {sorted(map(str, unknown))}")
        missing = {name for name in codecs if since.get(name, 0) <= version} - raw.keys()
        if missing:
            raise MetadataRecordError(f"{cls.__name__}: missing fields {sorted(missing)}")
        kwargs = {}
        for name, value in raw.items():
            try:
                kwargs[name] = codecs[name][1](value)
            except MetadataRecordError as exc:
                raise MetadataRecordError(f"{cls.__name__}.{name}: {exc}") from None
        return cls(**kwargs)

    return encode, decode


def _identity(value: Any) -> Any:
    return value


def _checked(kind: type) -> _Decoder:
    def decode(value: Any) -> Any:
        # bool is an int subclass; keep the two apart.
        if type(value) is not kind:
            raise MetadataRecordError(f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    return decode


def _decode_uuid(value: Any) -> uuid.UUID:
    if type(value) is not bytes or len(value) != 16:
        raise MetadataRecordError("expected a 16-byte uuid")
    return uuid.UUID(bytes=value)


def _value_codec(hint: Any) -> tuple[_Encoder, _Decoder]:
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        enc, dec = _value_codec(inner)
        return (
            lambda v: None if v is None else enc(v),
            lambda v: None if v is None else dec(v),
        )
    if hint is uuid.UUID:
        return (lambda v: v.bytes), _decode_uuid
    if hint in (int, str, bool, bytes, float):
        return _identity, _checked(hint)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item_enc, item_dec = _value_codec(args[0])

        def decode_list(value: Any) -> tuple[Any, ...]:
            if not isinstance(value, list):
                raise MetadataRecordError("expected an array")
            return tuple(item_dec(v) for v in value)

        return (lambda v: [item_enc(x) for x in v]), decode_list
    if dataclasses.is_dataclass(hint):
        return _struct_codec(hint)
    raise TypeError(f"no metadata codec for {hint!r}")
