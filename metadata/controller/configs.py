"""IncrementalAlterConfigs and the legacy AlterConfigs for topic (2) and broker (4)
resources.

Broker resource names are a broker id or "" for the cluster-wide default. List values are
comma-separated, as on the wire; APPEND and SUBTRACT start from the current value, else the
config's default. Both APIs' responses are defined here once (the broker's error answers
use them too).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from clients.protocol import ErrorCode
from clients.protocol.messages.alter_configs import (
    AlterConfigsRequestData,
    AlterConfigsResponseData,
)
from clients.protocol.messages.incremental_alter_configs import (
    IncrementalAlterConfigsRequestData,
    IncrementalAlterConfigsResponseData,
)
from metadata.controller.rejection import Rejected, error_text
from metadata.image import MetadataImage
from metadata.records import BROKER_RESOURCE, TOPIC_RESOURCE, ConfigRecord, MetadataRecord
from metadata.settings import ControllerSettings
from metadata.topic_configs import TOPIC_CONFIGS, ConfigValidationError

logger = logging.getLogger(__name__)

class InvalidReconfiguration(ValueError):
    """A broker config change Kafka's brokers refuse as a reconfiguration (their
    ConfigException becomes INVALID_REQUEST), unlike a value that does not parse."""


class NotDynamicConfig(InvalidReconfiguration):
    """A known broker key that only the static file may set ("Cannot update these configs
    dynamically")."""


OP_SET = 0
OP_DELETE = 1
OP_APPEND = 2
OP_SUBTRACT = 3

IncrementalResult = IncrementalAlterConfigsResponseData.AlterConfigsResourceResponse
LegacyResult = AlterConfigsResponseData.AlterConfigsResourceResponse


@dataclass(frozen=True, slots=True)
class ConfigOp:
    """One config change of a resource: `operation` is OP_SET, OP_DELETE, OP_APPEND or
    OP_SUBTRACT."""

    name: str
    value: str | None
    operation: int


@dataclass(frozen=True, slots=True)
class ResourceOutcome:
    """What became of one resource of an alter request (the fields both responses carry)."""

    resource_type: int
    resource_name: str
    error_code: int
    error_message: str | None


def incremental_result(resource_type: int, resource_name: str, code: int,
                       message: str | None) -> IncrementalResult:
    """One resource's IncrementalAlterConfigs result."""
    return IncrementalResult(error_code=code, error_message=message,
                             resource_type=resource_type, resource_name=resource_name)


def legacy_result(resource_type: int, resource_name: str, code: int,
                  message: str | None) -> LegacyResult:
    """One resource's AlterConfigs result."""
    return LegacyResult(error_code=code, error_message=message,
                        resource_type=resource_type, resource_name=resource_name)


def incremental_alter_configs_error(body: IncrementalAlterConfigsRequestData, version: int,
                                    code: int, message: str | None = None
                                    ) -> IncrementalAlterConfigsResponseData:
    """Every resource of the request with `code` (the response has no top-level error)."""
    text = error_text(code, message)
    return IncrementalAlterConfigsResponseData(responses=[
        incremental_result(res.resource_type, res.resource_name, code, text)
        for res in body.resources])


def alter_configs_error(body: AlterConfigsRequestData, version: int, code: int,
                        message: str | None = None) -> AlterConfigsResponseData:
    """Every resource of the request with `code` (the response has no top-level error)."""
    text = error_text(code, message)
    return AlterConfigsResponseData(responses=[
        legacy_result(res.resource_type, res.resource_name, code, text)
        for res in body.resources])


def incremental_alter_configs(
    image: MetadataImage,
    request: IncrementalAlterConfigsRequestData,
    now_ms: int,
    *,
    settings: ControllerSettings,
) -> tuple[list[MetadataRecord], IncrementalAlterConfigsResponseData]:
    """IncrementalAlterConfigsRequest -> records + response (`validate_only` writes nothing)."""
    resources = [(res.resource_type, res.resource_name,
                  [ConfigOp(c.name, c.value, c.config_operation) for c in res.configs])
                 for res in request.resources]
    records, outcomes = _alter(image, resources, request.validate_only, settings)
    return records, IncrementalAlterConfigsResponseData(responses=[
        incremental_result(o.resource_type, o.resource_name, o.error_code, o.error_message)
        for o in outcomes])


def legacy_alter_configs(
    image: MetadataImage,
    request: AlterConfigsRequestData,
    now_ms: int,
    *,
    settings: ControllerSettings,
) -> tuple[list[MetadataRecord], AlterConfigsResponseData]:
    """AlterConfigsRequest (key 33): each resource's dynamic configs become exactly the given
    set; keys it leaves out are deleted (a null value deletes too)."""
    resources = []
    for res in request.resources:
        names = {c.name for c in res.configs}
        ops = [ConfigOp(c.name, c.value, OP_DELETE if c.value is None else OP_SET)
               for c in res.configs]
        current = image.configs.get((res.resource_type, res.resource_name), {})
        ops.extend(ConfigOp(name, None, OP_DELETE)
                   for name in sorted(current) if name not in names)
        resources.append((res.resource_type, res.resource_name, ops))
    records, outcomes = _alter(image, resources, request.validate_only, settings)
    return records, AlterConfigsResponseData(responses=[
        legacy_result(o.resource_type, o.resource_name, o.error_code, o.error_message)
        for o in outcomes])


def _alter(
    image: MetadataImage,
    resources: list[tuple[int, str, list[ConfigOp]]],
    validate_only: bool,
    settings: ControllerSettings,
) -> tuple[list[MetadataRecord], list[ResourceOutcome]]:
    """Each resource's changes (`validate_only`: none are kept) and outcome, in order."""
    seen: dict[tuple[int, str], int] = {}
    for rtype, rname, _ in resources:
        seen[(rtype, rname)] = seen.get((rtype, rname), 0) + 1
    records: list[MetadataRecord] = []
    outcomes: list[ResourceOutcome] = []
    for rtype, rname, ops in resources:
        code, message = ErrorCode.NONE, None
        try:
            if seen[(rtype, rname)] > 1:
                raise Rejected(ErrorCode.INVALID_REQUEST, f"Duplicate resource {rname!r} in request.")
            changes = _alter_one(image, rtype, rname, ops, settings)
        except Rejected as rej:
            code, message = rej.code, rej.message
        else:
            if not validate_only:
                records.extend(changes)
                if changes:
                    logger.info("altering %d config(s) of resource %d:%r", len(changes), rtype, rname)
        outcomes.append(ResourceOutcome(rtype, rname, code, message))
    return records, outcomes


def _alter_one(
    image: MetadataImage,
    rtype: int,
    rname: str,
    ops: list[ConfigOp],
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
    names = [op.name for op in ops]
    if len(set(names)) != len(names):
        raise Rejected(ErrorCode.INVALID_REQUEST, "Duplicate configuration key in request.")

    current = dict(image.configs.get((rtype, rname), {}))
    updated = dict(current)
    for op in ops:
        name, value, operation = op.name, op.value, op.operation
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
    except InvalidReconfiguration as exc:
        raise Rejected(ErrorCode.INVALID_REQUEST, str(exc)) from None
    except (ConfigValidationError, ValueError) as exc:
        raise Rejected(ErrorCode.INVALID_CONFIG, str(exc)) from None
