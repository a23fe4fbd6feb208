"""AlterClientQuotas decided against the image, and the DescribeClientQuotas answer.

Validation follows Kafka's controller: each entity is checked on its own (empty, duplicate
or unknown entity types, empty names, unknown keys, non-integral byte rates) and answered
with INVALID_REQUEST; a failing entity changes nothing, the others go ahead. Both APIs'
responses, error answers included, are defined here once.
"""

from __future__ import annotations

import logging
import math
from clients.protocol import ErrorCode
from clients.protocol.messages.alter_client_quotas import (
    AlterClientQuotasRequestData,
    AlterClientQuotasResponseData,
)
from clients.protocol.messages.describe_client_quotas import (
    DescribeClientQuotasRequestData,
    DescribeClientQuotasResponseData,
)
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
from metadata.controller.rejection import error_text
from metadata.image import MetadataImage
from metadata.records import MetadataRecord

logger = logging.getLogger(__name__)

# DescribeClientQuotas match types.
MATCH_EXACT = 0
MATCH_DEFAULT = 1
MATCH_ANY = 2

Problem = tuple[int, str]
AlterEntry = AlterClientQuotasResponseData.EntryData
AlterEntity = AlterClientQuotasResponseData.EntityData
DescribeEntity = DescribeClientQuotasResponseData.EntityData


def alter_client_quotas_error(body: AlterClientQuotasRequestData, version: int, code: int,
                              message: str | None = None) -> AlterClientQuotasResponseData:
    """Every entry of the request with `code` (the response has no top-level error)."""
    text = error_text(code, message)
    return AlterClientQuotasResponseData(entries=[
        AlterEntry(error_code=code, error_message=text, entity=[
            AlterEntity(entity_type=e.entity_type, entity_name=e.entity_name)
            for e in entry.entity])
        for entry in body.entries])


def describe_client_quotas_error(body: DescribeClientQuotasRequestData, version: int, code: int,
                                 message: str | None = None) -> DescribeClientQuotasResponseData:
    """The top-level `code` and no entries."""
    return DescribeClientQuotasResponseData(error_code=code,
                                            error_message=error_text(code, message), entries=None)


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


def alter_client_quotas(image: MetadataImage, request: AlterClientQuotasRequestData,
                        now_ms: int) -> tuple[list[MetadataRecord], AlterClientQuotasResponseData]:
    """AlterClientQuotasRequest -> records + one result per entry."""
    records: list[MetadataRecord] = []
    results: list[AlterEntry] = []
    done: set[QuotaEntity] = set()
    for entry in request.entries:
        components = [(e.entity_type, e.entity_name) for e in entry.entity]
        problem = _entity_problem(components)
        entity = entity_of(components)
        if problem is None and entity in done:
            problem = ErrorCode.INVALID_REQUEST, f"Ignoring duplicate entity {components}"
        ops: dict[str, float | None] = {}
        for op in entry.ops:
            key = op.key
            if problem is None and key in ops:
                problem = (ErrorCode.INVALID_REQUEST,
                           f"Duplicate quota key {key} not updating quota for this entity")
            ops[key] = None if op.remove else float(op.value)
        if problem is None:
            for key, value in ops.items():
                if value is not None:
                    problem = _value_problem(key, value)
                    if problem is not None:
                        break
        done.add(entity)
        if problem is None and not request.validate_only:
            current = image.client_quotas.get(entity, {})
            for key, value in ops.items():
                if value is None and key in current:
                    records.append(ClientQuotaRecord(
                        tuple(EntityData(t, n) for t, n in entity), key, 0.0, True))
                elif value is not None and current.get(key) != value:
                    records.append(ClientQuotaRecord(
                        tuple(EntityData(t, n) for t, n in entity), key, value, False))
        code, message = problem if problem is not None else (ErrorCode.NONE, None)
        results.append(AlterEntry(error_code=code, error_message=message, entity=[
            AlterEntity(entity_type=t, entity_name=n) for t, n in components]))
    if records:
        logger.info("altering %d client quota value(s)", len(records))
    return records, AlterClientQuotasResponseData(entries=results)


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


def describe_client_quotas(image: MetadataImage, request: DescribeClientQuotasRequestData
                           ) -> DescribeClientQuotasResponseData:
    """DescribeClientQuotasResponse: the entities matching the filter and their values."""
    components: list[tuple[str, int, str | None]] = []
    for c in request.components:
        entity_type, match_type, match = c.entity_type, c.match_type, c.match
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
            return describe_client_quotas_error(request, 0, ErrorCode.INVALID_REQUEST, problem)
        components.append((entity_type, match_type, match))
    entries = [
        DescribeClientQuotasResponseData.EntryData(
            entity=[DescribeEntity(entity_type=t, entity_name=n) for t, n in entity],
            values=[DescribeClientQuotasResponseData.ValueData(key=k, value=v)
                    for k, v in sorted(values.items())])
        for entity, values in sorted(image.client_quotas.items(), key=lambda e: repr(e[0]))
        if _matches(entity, components, request.strict)]
    return DescribeClientQuotasResponseData(error_code=0, error_message=None, entries=entries)
