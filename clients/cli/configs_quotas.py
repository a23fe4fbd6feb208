"""Client quotas in `raftka configs` (kafka-configs.sh's quota forms):

    raftka configs --bootstrap-server H:P --alter --entity-type users --entity-name alice \\
        --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
    raftka configs ... --alter --entity-type clients --entity-default \\
        --add-config request_percentage=50
    raftka configs ... --alter --entity-type users --entity-name alice \\
        --entity-type clients --entity-name app --delete-config producer_byte_rate
    raftka configs ... --describe --entity-type users [--entity-name alice | --entity-default]

Each `--entity-type` pairs, in order, with the `--entity-name` or `--entity-default` after
it. Without a name `--describe` lists every entity of the type.
"""

from __future__ import annotations

import argparse
from typing import Any

from clients.cli.admin_tool import Outcome

QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage")
# Long-valued keys print without a fraction.
_LONG_KEYS = ("producer_byte_rate", "consumer_byte_rate")
ENTITY_TYPES = {"users": "user", "clients": "client-id"}
_LABELS = {"user": "user-principal", "client-id": "client-id"}


def is_quota_key(key: str) -> bool:
    return key.split("=", 1)[0].strip() in QUOTA_KEYS


def wants_quotas(types: list[str], names: list[str | None], add: list[str],
                 delete: list[str]) -> bool:
    """Whether the command is about client quotas (rather than SCRAM credentials)."""
    if not set(types) <= set(ENTITY_TYPES):
        return False
    if "clients" in types or len(types) > 1 or None in names:
        return True
    return any(is_quota_key(item) for item in add + delete)


def _entity(types: list[str], names: list[str | None], alter: bool
            ) -> list[tuple[str, str | None, bool]]:
    """(entity type, name, named?) per --entity-type; `named` False: no name was given."""
    unknown = [t for t in types if t not in ENTITY_TYPES]
    if unknown:
        raise ValueError(f"--entity-type {unknown[0]} cannot be combined with a quota entity; "
                         "use users and/or clients")
    if len(set(types)) != len(types):
        raise ValueError("each --entity-type may be given once")
    if len(names) > len(types):
        raise ValueError("more --entity-name/--entity-default than --entity-type options")
    if alter and len(names) < len(types):
        raise ValueError("--alter needs an --entity-name or --entity-default for each "
                         "--entity-type")
    out = []
    for i, entity_type in enumerate(types):
        named = i < len(names)
        name = names[i] if named else None
        if named and name is not None and not name:
            raise ValueError(f"--entity-name of {entity_type} must not be empty")
        out.append((ENTITY_TYPES[entity_type], name, named))
    return out


def _parse_value(item: str) -> tuple[str, float]:
    key, sep, text = item.partition("=")
    key = key.strip()
    if not sep:
        raise ValueError(f"--add-config: expected key=value, not {item!r}")
    if key not in QUOTA_KEYS:
        raise ValueError(f"--add-config: unknown quota key {key!r} (valid keys: "
                         f"{', '.join(QUOTA_KEYS)})")
    try:
        value = float(text.strip())
    except ValueError:
        raise ValueError(f"--add-config: {key} must be a number, not {text.strip()!r}") from None
    return key, value


def _describe_label(entity: tuple[tuple[str, str | None], ...]) -> str:
    parts = []
    for entity_type, name in sorted(entity, key=lambda p: p[0] != "user"):
        label = _LABELS.get(entity_type, entity_type)
        parts.append(f"the default {label}" if name is None else f"{label} '{name}'")
    return ", ".join(parts)


def _format(key: str, value: float) -> str:
    return f"{key}={value:.1f}" if key in _LONG_KEYS or value != int(value) else f"{key}={value}"


def describe_lines(admin: Any, types: list[str], names: list[str | None]) -> list[str]:
    from clients.admin.quota_operations import QuotaFilterComponent

    components = []
    for entity_type, name, named in _entity(types, names, alter=False):
        if not named:
            components.append(QuotaFilterComponent.of_any(entity_type))
        elif name is None:
            components.append(QuotaFilterComponent.of_default(entity_type))
        else:
            components.append(QuotaFilterComponent.of_entity(entity_type, name))
    described = admin.describe_client_quotas(components, strict=True)
    return [f"Quota configs for {_describe_label(entity)} are "
            + ", ".join(_format(k, v) for k, v in sorted(values.items()))
            for entity, values in sorted(described.items(), key=lambda e: repr(e[0]))]


def execute(args: argparse.Namespace, admin: Any, types: list[str],
            names: list[str | None], add: list[str], delete: list[str]) -> Outcome:
    """`--describe` or `--alter` of the client quotas of one entity (`add`, `delete`: the
    already comma-split --add-config and --delete-config items)."""
    if args.describe:
        return describe_lines(admin, types, names)
    entity = _entity(types, names, alter=True)
    changes: dict[str, float | None] = dict(_parse_value(item) for item in add)
    for key in delete:
        if key not in QUOTA_KEYS:
            raise ValueError(f"--delete-config: unknown quota key {key!r}")
        changes[key] = None
    (result,) = admin.alter_client_quotas([({t: n for t, n, _ in entity}, changes)])
    if result.error_code:
        from clients.protocol import ErrorCode

        raise ValueError(result.error_message or ErrorCode.from_code(result.error_code).message)
    return [f"Completed updating config for {_describe_label(result.entity)}."]
