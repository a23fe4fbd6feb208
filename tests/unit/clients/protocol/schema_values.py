"""Hypothesis strategies for message bodies, derived from our schema declarations."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from hypothesis import strategies as st

from clients.protocol import APIS, ApiKey
from clients.protocol.compiler import field_default
from clients.protocol.schema import Array, Field, FieldType, Struct, in_versions

_INT_BOUNDS = {
    "int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1), "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1), "uint32": (0, 2**32 - 1), "int64": (-(2**63), 2**63 - 1),
}


def _type_strategy(ftype: FieldType, version: int) -> st.SearchStrategy[Any]:
    if isinstance(ftype, Array):
        return st.lists(_type_strategy(ftype.of, version), max_size=3)
    if isinstance(ftype, Struct):
        return struct_strategy(ftype.fields, version)
    if ftype in _INT_BOUNDS:
        return st.integers(*_INT_BOUNDS[ftype])
    return {
        "bool": st.booleans(),
        "float64": st.floats(allow_nan=False),
        "uuid": st.uuids(),
        "string": st.text(max_size=12),
        "bytes": st.binary(max_size=40),
        "records": st.binary(max_size=80),
    }[ftype]


def struct_strategy(fields: tuple[Field, ...], version: int) -> st.SearchStrategy[dict]:
    present = {}
    for f in fields:
        if not in_versions(f.versions, version):
            continue
        strategy = _type_strategy(f.type, version)
        if in_versions(f.nullable, version):
            strategy = st.none() | strategy
        present[f.name] = strategy
    return st.fixed_dictionaries(present)


@lru_cache(maxsize=None)
def body_strategy(api_key: ApiKey, version: int, request: bool) -> st.SearchStrategy[dict]:
    api = APIS[api_key]
    return struct_strategy(api.request if request else api.response, version)


def expected_body(fields: tuple[Field, ...], version: int, value: dict) -> dict:
    """What decoding should give back: the value plus defaults for fields the version lacks."""
    out = {}
    for f in fields:
        if in_versions(f.versions, version):
            out[f.name] = _expected_value(f.type, version, value[f.name])
        else:
            out[f.name] = field_default(f)
    return out


def _expected_value(ftype: FieldType, version: int, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(ftype, Array):
        return [_expected_value(ftype.of, version, v) for v in value]
    if isinstance(ftype, Struct):
        return expected_body(ftype.fields, version, value)
    return value


def normalise(value: Any) -> Any:
    """Decoded memoryviews as bytes, so results compare with plain values."""
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    return value


def random_body(fields: tuple[Field, ...], version: int, rng: Any) -> dict:
    """A deterministic pseudo-random body from a ``random.Random`` (for fuzz seeds)."""
    out = {}
    for f in fields:
        if not in_versions(f.versions, version):
            continue
        if in_versions(f.nullable, version) and rng.random() < 0.15:
            out[f.name] = None
        else:
            out[f.name] = _random_value(f.type, version, rng)
    return out


def _random_value(ftype: FieldType, version: int, rng: Any) -> Any:
    if isinstance(ftype, Array):
        return [_random_value(ftype.of, version, rng) for _ in range(rng.randint(0, 3))]
    if isinstance(ftype, Struct):
        return random_body(ftype.fields, version, rng)
    if ftype in _INT_BOUNDS:
        low, high = _INT_BOUNDS[ftype]
        return rng.choice([0, max(low, -1), 1, low, high, rng.randint(low, high)])
    if ftype == "bool":
        return rng.random() < 0.5
    if ftype == "float64":
        return rng.uniform(-1e6, 1e6)
    if ftype == "uuid":
        import uuid

        return uuid.UUID(int=rng.getrandbits(128))
    if ftype == "string":
        return "".join(rng.choice("abcé-_.0") for _ in range(rng.randint(0, 12)))
    return rng.randbytes(rng.randint(0, 64))
