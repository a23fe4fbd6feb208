"""Client quotas in the metadata log (KIP-546 in KRaft): the record, the image's view, and
the precedence by which a broker finds the quota of a (user, client-id) pair.

An entity is a set of (type, name) pairs with types `user` and `client-id`; a None name is
the default entity of that type. Values are doubles, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from metadata.record_classes import ClientQuotaRecord, EntityData

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
# Kafka's quota keys of user and client-id entities: name -> whether the value is a Long.
QUOTA_KEYS: dict[str, bool] = {PRODUCER_BYTE_RATE: True, CONSUMER_BYTE_RATE: True,
                               REQUEST_PERCENTAGE: False}


QuotaEntity = tuple[tuple[str, str | None], ...]
"""An entity as sorted (type, name) pairs; a None name is that type's default."""


def entity_of(components: object) -> QuotaEntity:
    """The canonical entity of `(type, name)` pairs or `EntityData`s."""
    pairs = []
    for c in components:  # type: ignore[attr-defined]
        if isinstance(c, EntityData):
            pairs.append((c.entity_type, c.entity_name))
        else:
            pairs.append((str(c[0]), c[1]))
    return tuple(sorted(pairs, key=lambda p: p[0]))


QuotaChanges = Mapping[QuotaEntity, Mapping[str, float | None]]


def merge_quotas(base: Mapping[QuotaEntity, Mapping[str, float]], changes: QuotaChanges
                 ) -> dict[QuotaEntity, Mapping[str, float]]:
    """`base` with `changes` applied (a None value removes the key; empty entities go)."""
    merged = dict(base)
    for entity, values in changes.items():
        current = dict(merged.get(entity, {}))
        for key, value in values.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value
        if current:
            merged[entity] = current
        else:
            merged.pop(entity, None)
    return merged


def quota_records(quotas: Mapping[QuotaEntity, Mapping[str, float]]) -> list[ClientQuotaRecord]:
    """Records that rebuild `quotas` (snapshots)."""
    return [ClientQuotaRecord(tuple(EntityData(t, n) for t, n in entity), key, value, False)
            for entity, values in sorted(quotas.items(), key=lambda e: repr(e[0]))
            for key, value in sorted(values.items())]


@dataclass(frozen=True, slots=True)
class ResolvedQuota:
    """The quota that applies to a client, and the (user, client-id) pair whose usage it
    limits: clients sharing a user-level quota share one window, as in Kafka."""

    bound: float
    user: str
    client_id: str


def resolve_quota(quotas: Mapping[QuotaEntity, Mapping[str, float]], key: str, user: str,
                  client_id: str) -> ResolvedQuota | None:
    """The quota `key` of (`user`, `client_id`) by Kafka's precedence, most specific first:
    user+client, user+default client, user, default user+client, default user+default
    client, default user, client, default client. None: unlimited."""
    for entity, tag_user, tag_client in (
            (((CLIENT_ID, client_id), (USER, user)), user, client_id),
            (((CLIENT_ID, None), (USER, user)), user, client_id),
            (((USER, user),), user, ""),
            (((CLIENT_ID, client_id), (USER, None)), user, client_id),
            (((CLIENT_ID, None), (USER, None)), user, client_id),
            (((USER, None),), user, ""),
            (((CLIENT_ID, client_id),), "", client_id),
            (((CLIENT_ID, None),), "", client_id)):
        values = quotas.get(entity)
        if values is not None and key in values:
            return ResolvedQuota(values[key], tag_user, tag_client)
    return None


def quota_user(principal: str) -> str:
    """The quota user of a principal (`User:alice` -> `alice`)."""
    kind, sep, name = principal.partition(":")
    return name if sep else principal
