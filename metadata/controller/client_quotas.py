"""AlterClientQuotas decided against the image, and the DescribeClientQuotas answer.

Validation follows Kafka's controller: each entity is checked on its own (empty, duplicate
or unknown entity types, empty names, unknown keys, non-integral byte rates) and answered
with INVALID_REQUEST; a failing entity changes nothing, the others go ahead.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Mapping

from clients.protocol import ErrorCode
from metadata.client_quotas import (
    CLIENT_ID,
    IP,
    QUOTA_KEYS,
    USER,
    ClientQuotaRecord,
    EntityData,
    QuotaEntity,
    entity_of,
)
from metadata.controller import Decision
from metadata.image import MetadataImage
from metadata.records import MetadataRecord

logger = logging.getLogger(__name__)

# DescribeClientQuotas match types.
MATCH_EXACT = 0
MATCH_DEFAULT = 1
MATCH_ANY = 2

Problem = tuple[int, str]


def _entity_problem(components: list[tuple[str, str | None]]) -> Problem | None:
    if not components:
        return ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity"
    seen: set[str] = set()
    for entity_type, name in components:
        if entity_type in seen:
            return (ErrorCode.INVALID_REQUEST,
                    f"Invalid empty client quota entity, duplicate entity entry {entity_type}")
        seen.add(entity_type)
        if entity_type == IP:
            return ErrorCode.INVALID_REQUEST, "Client quotas of ip entities are not supported"
        if entity_type not in (USER, CLIENT_ID):
            return (ErrorCode.INVALID_REQUEST,
                    f"Unhandled client quota entity type: {entity_type}")
        if name is not None and not name:
            return ErrorCode.INVALID_REQUEST, f"Empty {entity_type} not supported"
    return None


def _value_problem(key: str, value: float) -> Problem | None:
    if key not in QUOTA_KEYS:
        return ErrorCode.INVALID_REQUEST, f"Invalid configuration key {key}"
    if not math.isfinite(value) or value <= 0:
        return ErrorCode.INVALID_REQUEST, f"Quota {key} must be a positive number"
    if QUOTA_KEYS[key] and abs(round(value) - value) > 1e-6:
        return ErrorCode.INVALID_REQUEST, f"Configuration {key} must be a Long value"
    return None


def _wire_entity(components: list[tuple[str, str | None]]) -> list[dict[str, Any]]:
    return [{"entity_type": t, "entity_name": n} for t, n in components]


def alter_client_quotas(image: MetadataImage, request: Mapping[str, Any],
                        now_ms: int) -> Decision:
    """AlterClientQuotasRequest -> records + one result per entry."""
    validate_only = bool(request.get("validate_only"))
    records: list[MetadataRecord] = []
    results: list[dict[str, Any]] = []
    done: set[QuotaEntity] = set()
    for entry in request.get("entries") or ():
        components = [(str(e.get("entity_type") or ""), e.get("entity_name"))
                      for e in entry.get("entity") or ()]
        problem = _entity_problem(components)
        entity = entity_of(components)
        if problem is None and entity in done:
            problem = ErrorCode.INVALID_REQUEST, f"Ignoring duplicate entity {components}"
        ops: dict[str, float | None] = {}
        for op in entry.get("ops") or ():
            key = str(op.get("key") or "")
            if problem is None and key in ops:
                problem = (ErrorCode.INVALID_REQUEST,
                           f"Duplicate quota key {key} not updating quota for this entity")
            ops[key] = None if op.get("remove") else float(op.get("value") or 0.0)
        if problem is None:
            for key, value in ops.items():
                if value is not None:
                    problem = _value_problem(key, value)
                    if problem is not None:
                        break
        done.add(entity)
        if problem is None and not validate_only:
            current = image.client_quotas.get(entity, {})
            for key, value in ops.items():
                if value is None and key in current:
                    records.append(ClientQuotaRecord(
                        tuple(EntityData(t, n) for t, n in entity), key, 0.0, True))
                elif value is not None and current.get(key) != value:
                    records.append(ClientQuotaRecord(
                        tuple(EntityData(t, n) for t, n in entity), key, value, False))
        code, message = problem if problem is not None else (ErrorCode.NONE, None)
        results.append({"error_code": code, "error_message": message,
                        "entity": _wire_entity(components)})
    if records:
        logger.info("altering %d client quota value(s)", len(records))
    return records, {"throttle_time_ms": 0, "entries": results}


def _matches(entity: QuotaEntity, components: list[tuple[str, int, str | None]],
             strict: bool) -> bool:
    names = dict(entity)
    for entity_type, match_type, match in components:
        if entity_type not in names:
            return False
        if match_type == MATCH_EXACT and names[entity_type] != match:
            return False
        if match_type == MATCH_DEFAULT and names[entity_type] is not None:
            return False
    return not strict or len(names) == len(components)


def describe_client_quotas(image: MetadataImage, request: Mapping[str, Any]) -> dict[str, Any]:
    """DescribeClientQuotasResponse: the entities matching the filter and their values."""
    components: list[tuple[str, int, str | None]] = []
    for c in request.get("components") or ():
        entity_type, match_type = str(c.get("entity_type") or ""), int(c.get("match_type") or 0)
        match = c.get("match")
        problem = None
        if any(entity_type == seen[0] for seen in components):
            problem = f"Duplicate {entity_type} filter component"
        elif entity_type not in (USER, CLIENT_ID, IP):
            problem = f"Custom entity type {entity_type!r} is not supported"
        elif match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY):
            problem = f"Unknown match type {match_type}"
        elif match_type == MATCH_EXACT and match is None:
            problem = f"Request specified EXACT matching of {entity_type} without a name"
        if problem is not None:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REQUEST,
                    "error_message": problem, "entries": None}
        components.append((entity_type, match_type, match))
    entries = [
        {"entity": _wire_entity(list(entity)),
         "values": [{"key": k, "value": v} for k, v in sorted(values.items())]}
        for entity, values in sorted(image.client_quotas.items(), key=lambda e: repr(e[0]))
        if _matches(entity, components, bool(request.get("strict")))]
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "entries": entries}
