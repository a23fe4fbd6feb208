"""Client quota administration (KIP-546): the admin calls behind `raftka configs
--entity-type users|clients` for quotas.

An entity is a mapping of entity type (`user`, `client-id`) to a name, None naming the
default entity of that type, e.g. ``{"user": "alice", "client-id": None}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from clients.admin.operations import Call, Operation, _fixed, _raise_for
from clients.protocol import ApiKey

USER = "user"
CLIENT_ID = "client-id"

MATCH_EXACT = 0
MATCH_DEFAULT = 1
MATCH_ANY = 2

QuotaEntity = tuple[tuple[str, str | None], ...]
"""An entity as (type, name) pairs sorted by type; hashable, so it can key a dict."""


def quota_entity(components: Mapping[str, str | None]) -> QuotaEntity:
    """The canonical form of an entity mapping."""
    return tuple(sorted(components.items()))


@dataclass(frozen=True)
class QuotaFilterComponent:
    """One part of a DescribeClientQuotas filter (Kafka's ClientQuotaFilterComponent)."""

    entity_type: str
    match_type: int = MATCH_ANY
    match: str | None = None

    @classmethod
    def of_entity(cls, entity_type: str, name: str) -> "QuotaFilterComponent":
        return cls(entity_type, MATCH_EXACT, name)

    @classmethod
    def of_default(cls, entity_type: str) -> "QuotaFilterComponent":
        return cls(entity_type, MATCH_DEFAULT)

    @classmethod
    def of_any(cls, entity_type: str) -> "QuotaFilterComponent":
        return cls(entity_type, MATCH_ANY)


@dataclass(frozen=True)
class QuotaAlterationResult:
    """The answer for one altered entity."""

    entity: QuotaEntity
    error_code: int
    error_message: str | None = field(default=None)


def describe_client_quotas(components: Iterable[QuotaFilterComponent] = (),
                           strict: bool = False) -> Operation:
    """{entity: {key: value}} of the entities matching every component (``strict``: and
    naming no other entity type)."""
    body = {"components": [{"entity_type": c.entity_type, "match_type": c.match_type,
                            "match": c.match} for c in components],
            "strict": strict}
    response = yield Call(ApiKey.DESCRIBE_CLIENT_QUOTAS, _fixed(body))
    _raise_for(response["error_code"], response.get("error_message"), "DescribeClientQuotas")
    return {tuple(sorted((e["entity_type"], e["entity_name"]) for e in entry["entity"])):
            {v["key"]: v["value"] for v in entry["values"]}
            for entry in response.get("entries") or ()}


def alter_client_quotas(alterations: Iterable[tuple[Mapping[str, str | None],
                                                    Mapping[str, float | None]]],
                        validate_only: bool = False) -> Operation:
    """Set (value) or remove (None) quota keys of each entity; per-entity errors are
    returned, not raised."""
    entries = [{"entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()],
                "ops": [{"key": k, "value": 0.0 if v is None else float(v), "remove": v is None}
                        for k, v in changes.items()]}
               for entity, changes in alterations]
    if not entries:
        return []
    response = yield Call(ApiKey.ALTER_CLIENT_QUOTAS,
                          _fixed({"entries": entries, "validate_only": validate_only}),
                          to_controller=True)
    return [QuotaAlterationResult(
                tuple(sorted((e["entity_type"], e["entity_name"]) for e in entry["entity"])),
                entry["error_code"], entry.get("error_message"))
            for entry in response["entries"]]
