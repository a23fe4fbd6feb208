"""IncrementalAlterConfigs and the legacy AlterConfigs for topic (2) and broker (4)
resources.

Broker resource names are a broker id or "" for the cluster-wide default. List values are
comma-separated, as on the wire; APPEND and SUBTRACT start from the current value, else the
config's default.
"""

from __future__ import annotations

import logging
from typing import Any

from clients.protocol import ErrorCode
from metadata.controller import Decision
from metadata.controller.rejection import Rejected
from metadata.image import MetadataImage
from metadata.records import BROKER_RESOURCE, TOPIC_RESOURCE, ConfigRecord, MetadataRecord
from metadata.settings import ControllerSettings
from metadata.topic_configs import TOPIC_CONFIGS, ConfigValidationError

logger = logging.getLogger(__name__)

class NotDynamicConfig(ValueError):
    """A known broker key that only the static file may set; Kafka refuses it with
    INVALID_REQUEST ("Cannot update these configs dynamically")."""


OP_SET = 0
OP_DELETE = 1
OP_APPEND = 2
OP_SUBTRACT = 3


def incremental_alter_configs(
    image: MetadataImage,
    request: dict[str, Any],
    now_ms: int,
    *,
    settings: ControllerSettings,
) -> Decision:
    """IncrementalAlterConfigsRequest -> records + response (`validate_only` writes nothing)."""
    resources = request.get("resources") or []
    validate_only = bool(request.get("validate_only"))
    seen: dict[tuple[int, str], int] = {}
    for res in resources:
        key = (res["resource_type"], res["resource_name"])
        seen[key] = seen.get(key, 0) + 1
    records: list[MetadataRecord] = []
    responses = []
    for res in resources:
        rtype, rname = res["resource_type"], res["resource_name"]
        code, message = ErrorCode.NONE, None
        try:
            if seen[(rtype, rname)] > 1:
                raise Rejected(ErrorCode.INVALID_REQUEST, f"Duplicate resource {rname!r} in request.")
            changes = _alter_one(image, rtype, rname, res.get("configs") or [], settings)
        except Rejected as rej:
            code, message = rej.code, rej.message
        else:
            if not validate_only:
                records.extend(changes)
                if changes:
                    logger.info("altering %d config(s) of resource %d:%r", len(changes), rtype, rname)
        responses.append(
            {"error_code": code, "error_message": message, "resource_type": rtype, "resource_name": rname}
        )
    return records, {"throttle_time_ms": 0, "responses": responses}


def legacy_alter_configs(
    image: MetadataImage,
    request: dict[str, Any],
    now_ms: int,
    *,
    settings: ControllerSettings,
) -> Decision:
    """AlterConfigsRequest (key 33): each resource's dynamic configs become exactly the given
    set; keys it leaves out are deleted (a null value deletes too)."""
    resources = []
    for res in request.get("resources") or []:
        given = res.get("configs") or []
        names = {c["name"] for c in given}
        ops = [{"name": c["name"], "value": c.get("value"),
                "config_operation": OP_DELETE if c.get("value") is None else OP_SET}
               for c in given]
        current = image.configs.get((res["resource_type"], res["resource_name"]), {})
        ops.extend({"name": name, "value": None, "config_operation": OP_DELETE}
                   for name in sorted(current) if name not in names)
        resources.append({**res, "configs": ops})
    return incremental_alter_configs(image, {**request, "resources": resources}, now_ms,
                                     settings=settings)


def _alter_one(
    image: MetadataImage,
    rtype: int,
    rname: str,
    ops: list[dict[str, Any]],
    settings: ControllerSettings,
) -> list[MetadataRecord]:
    if rtype == TOPIC_RESOURCE:
        if rname not in image.topics_by_name:
            raise Rejected(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {rname} does not exist.")
    elif rtype == BROKER_RESOURCE:
        if rname != "" and not (rname.isascii() and rname.isdigit()):
            raise Rejected(ErrorCode.INVALID_REQUEST, f"Invalid broker name {rname!r}.")
    else:
        raise Rejected(ErrorCode.INVALID_REQUEST, f"Unexpected resource type {rtype}.")
    names = [op["name"] for op in ops]
    if len(set(names)) != len(names):
        raise Rejected(ErrorCode.INVALID_REQUEST, "Duplicate configuration key in request.")

    current = dict(image.configs.get((rtype, rname), {}))
    updated = dict(current)
    for op in ops:
        name, value, operation = op["name"], op.get("value"), op["config_operation"]
        if rtype == TOPIC_RESOURCE and name not in TOPIC_CONFIGS:
            raise Rejected(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
        if operation == OP_DELETE:
            updated.pop(name, None)
            continue
        if operation not in (OP_SET, OP_APPEND, OP_SUBTRACT):
            raise Rejected(ErrorCode.INVALID_REQUEST, f"Unknown config operation {operation}.")
        if value is None:
            raise Rejected(ErrorCode.INVALID_REQUEST, f"Null value not supported for: {name}")
        if operation == OP_SET:
            updated[name] = value
        else:
            updated[name] = _edit_list(rtype, name, updated.get(name), value, operation)

    records: list[MetadataRecord] = []
    for name in sorted(current.keys() | updated.keys()):
        new_value = updated.get(name)
        if new_value == current.get(name):
            continue
        if new_value is not None:
            _validate(rtype, name, new_value, settings)
        records.append(ConfigRecord(resource_type=rtype, resource_name=rname, name=name, value=new_value))
    return records


def _edit_list(rtype: int, name: str, current: str | None, value: str, operation: int) -> str:
    if rtype == TOPIC_RESOURCE:
        definition = TOPIC_CONFIGS[name]
        if definition.type != "list":
            verb = "APPEND" if operation == OP_APPEND else "SUBTRACT"
            raise Rejected(
                ErrorCode.INVALID_CONFIG, f"Can't {verb} to key {name} because its type is not LIST."
            )
        if current is None:
            default = definition.default
            current = ",".join(default) if isinstance(default, list) else str(default or "")
    items = [i.strip() for i in (current or "").split(",") if i.strip()]
    operands = [i.strip() for i in value.split(",") if i.strip()]
    if operation == OP_APPEND:
        items.extend(o for o in operands if o not in items)
    else:
        items = [i for i in items if i not in operands]
    return ",".join(items)


def _validate(rtype: int, name: str, value: str, settings: ControllerSettings) -> None:
    try:
        if rtype == TOPIC_RESOURCE:
            settings.check_topic_config(name, value)
        elif settings.validate_broker_config is not None:
            settings.validate_broker_config(name, value)
        elif not name:
            raise ValueError("empty config name")
    except NotDynamicConfig as exc:
        raise Rejected(ErrorCode.INVALID_REQUEST, str(exc)) from None
    except (ConfigValidationError, ValueError) as exc:
        raise Rejected(ErrorCode.INVALID_CONFIG, str(exc)) from None
