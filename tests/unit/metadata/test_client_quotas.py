"""Client quotas: Kafka's eight-level precedence, the controller's validation, replay and
the describe filter."""

from __future__ import annotations

import pytest

from typing import Any

from clients.protocol import ApiKey, ErrorCode
from metadata.client_quotas import CLIENT_ID, USER, ResolvedQuota, entity_of, resolve_quota
from metadata.controller.client_quotas import alter_client_quotas, describe_client_quotas
from metadata.delta import apply_records
from metadata.image import MetadataImage
from tests.unit.metadata.controller.harness import typed

KEY = "producer_byte_rate"
LEVELS = [
    (((USER, "alice"), (CLIENT_ID, "app")), ResolvedQuota(1, "alice", "app")),
    (((USER, "alice"), (CLIENT_ID, None)), ResolvedQuota(2, "alice", "app")),
    (((USER, "alice"),), ResolvedQuota(3, "alice", "")),
    (((USER, None), (CLIENT_ID, "app")), ResolvedQuota(4, "alice", "app")),
    (((USER, None), (CLIENT_ID, None)), ResolvedQuota(5, "alice", "app")),
    (((USER, None),), ResolvedQuota(6, "alice", "")),
    (((CLIENT_ID, "app"),), ResolvedQuota(7, "", "app")),
    (((CLIENT_ID, None),), ResolvedQuota(8, "", "app")),
]


@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_the_most_specific_configured_level_wins(level: int) -> None:
    quotas = {entity_of(entity): {KEY: float(rank + 1)}
              for rank, (entity, _) in enumerate(LEVELS) if rank >= level}
    assert resolve_quota(quotas, KEY, "alice", "app") == LEVELS[level][1]


def test_no_quota_is_unlimited_and_keys_resolve_independently() -> None:
    quotas = {entity_of(((USER, "alice"),)): {"consumer_byte_rate": 10.0}}
    assert resolve_quota(quotas, KEY, "alice", "app") is None
    assert resolve_quota(quotas, "consumer_byte_rate", "bob", "app") is None
    assert resolve_quota(quotas, "consumer_byte_rate", "alice", "x").bound == 10.0


def _alter(image: MetadataImage, entity: list[tuple[str, str | None]], ops: list[tuple],
           validate_only: bool = False) -> tuple[list, Any]:
    request = {"entries": [{"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                            "ops": [{"key": k, "value": v, "remove": r} for k, v, r in ops]}],
               "validate_only": validate_only}
    records, response = alter_client_quotas(
        image, typed(ApiKey.ALTER_CLIENT_QUOTAS, request), 0)
    return records, response.entries[0]


def test_alter_records_and_replays_then_removes() -> None:
    image = MetadataImage.empty()
    records, result = _alter(image, [(USER, "alice"), (CLIENT_ID, None)],
                             [(KEY, 1024.0, False), ("request_percentage", 50.5, False)])
    assert result.error_code == 0 and len(records) == 2
    _, image = apply_records(image, records)
    assert image.client_quotas[entity_of([(USER, "alice"), (CLIENT_ID, None)])] == {
        KEY: 1024.0, "request_percentage": 50.5}
    records, result = _alter(image, [(CLIENT_ID, None), (USER, "alice")], [(KEY, 0, True)])
    _, image = apply_records(image, records)
    assert dict(image.client_quotas) == {
        entity_of([(USER, "alice"), (CLIENT_ID, None)]): {"request_percentage": 50.5}}
    # Unchanged values and removals of absent keys write nothing.
    assert _alter(image, [(USER, "alice"), (CLIENT_ID, None)],
                  [("request_percentage", 50.5, False), (KEY, 0, True)])[0] == []
    # The snapshot records rebuild the same quotas.
    _, rebuilt = apply_records(MetadataImage.empty(), image.to_records())
    assert rebuilt.client_quotas == image.client_quotas


@pytest.mark.parametrize(("entity", "ops", "message"), [
    ([], [(KEY, 1.0, False)], "Invalid empty client quota entity"),
    ([(USER, "a"), (USER, "b")], [(KEY, 1.0, False)], "duplicate entity entry user"),
    ([("group", "g")], [(KEY, 1.0, False)], "Unhandled client quota entity type: group"),
    ([(USER, "")], [(KEY, 1.0, False)], "Empty user not supported"),
    ([(USER, "a")], [("bogus_rate", 1.0, False)], "Invalid configuration key bogus_rate"),
    ([(USER, "a")], [(KEY, -5.0, False)], "must be a positive number"),
    ([(CLIENT_ID, "c")], [(KEY, 10.5, False)], "must be a Long value"),
    ([(USER, "a")], [(KEY, 1.0, False), (KEY, 2.0, False)], "Duplicate quota key"),
])
def test_bad_entries_get_invalid_request_and_change_nothing(entity, ops, message) -> None:
    records, result = _alter(MetadataImage.empty(), entity, ops)
    assert records == []
    assert result.error_code == ErrorCode.INVALID_REQUEST
    assert message in result.error_message


def test_validate_only_checks_but_writes_nothing() -> None:
    records, result = _alter(MetadataImage.empty(), [(USER, "a")], [(KEY, 5.0, False)],
                             validate_only=True)
    assert records == [] and result.error_code == 0


def _image_with_quotas() -> MetadataImage:
    image = MetadataImage.empty()
    for entity in ([(USER, "alice")], [(USER, "alice"), (CLIENT_ID, "app")],
                   [(USER, None)], [(CLIENT_ID, "app")]):
        records, _ = _alter(image, entity, [(KEY, 100.0, False)])
        _, image = apply_records(image, records)
    return image


def _described(components: list[tuple[str, int, str | None]], strict: bool) -> set:
    response = describe_client_quotas(_image_with_quotas(), typed(ApiKey.DESCRIBE_CLIENT_QUOTAS, {
        "components": [{"entity_type": t, "match_type": m, "match": n} for t, m, n in components],
        "strict": strict}))
    assert response.error_code == 0
    return {tuple((e.entity_type, e.entity_name) for e in entry.entity)
            for entry in response.entries}


def test_describe_filters_exact_default_any_and_strict() -> None:
    assert _described([(USER, 0, "alice")], strict=False) == {
        ((USER, "alice"),), ((CLIENT_ID, "app"), (USER, "alice"))}
    assert _described([(USER, 0, "alice")], strict=True) == {((USER, "alice"),)}
    assert _described([(USER, 1, None)], strict=False) == {((USER, None),)}
    assert _described([(CLIENT_ID, 2, None)], strict=True) == {((CLIENT_ID, "app"),)}
    assert len(_described([], strict=False)) == 4


def test_describe_rejects_exact_match_without_a_name() -> None:
    response = describe_client_quotas(MetadataImage.empty(), typed(ApiKey.DESCRIBE_CLIENT_QUOTAS, {
        "components": [{"entity_type": USER, "match_type": 0, "match": None}], "strict": False}))
    assert response.error_code == ErrorCode.INVALID_REQUEST
