"""Dynamic broker configs: the admin calls behind `raftka configs --entity-type brokers`.

A broker resource is named by the broker id, or "" for the cluster-wide default that every
broker falls back to (Kafka's `--entity-default`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from clients.admin.operations import (
    BROKER_RESOURCE,
    CONFIG_SOURCES,
    Call,
    ConfigEntry,
    Operation,
    _fixed,
    _raise_for,
    incremental_alter_configs,
)
from clients.protocol import ApiKey


@dataclass(frozen=True)
class ConfigSynonym:
    """One place a broker config's value may come from (Kafka's ConfigEntry.ConfigSynonym)."""

    name: str
    value: str | None
    source: str


@dataclass(frozen=True)
class BrokerConfigEntry(ConfigEntry):
    """A ConfigEntry with its synonyms, highest priority first."""

    synonyms: tuple[ConfigSynonym, ...] = ()


def broker_resource_name(broker_id: int | None) -> str:
    """The ConfigResource name: the id, or "" for the cluster-wide default."""
    if broker_id is None:
        return ""
    if broker_id < 0:
        raise ValueError(f"invalid broker id {broker_id}")
    return str(broker_id)


def describe_broker_configs(broker_id: int | None,
                            keys: Iterable[str] | None = None) -> Operation:
    """{name: BrokerConfigEntry} of broker `broker_id`, asked of that broker (Kafka sends a
    broker resource to the broker itself); None describes the cluster-wide default."""
    name = broker_resource_name(broker_id)
    body = {"resources": [{"resource_type": BROKER_RESOURCE, "resource_name": name,
                           "configuration_keys": None if keys is None else list(keys)}],
            "include_synonyms": True, "include_documentation": False}
    response = yield Call(ApiKey.DESCRIBE_CONFIGS, _fixed(body), node_id=broker_id)
    entries: dict[str, ConfigEntry] = {}
    for result in response["results"]:
        _raise_for(result["error_code"], result.get("error_message"), _subject(name))
        for c in result["configs"]:
            synonyms = tuple(
                ConfigSynonym(s["name"], s.get("value"),
                              CONFIG_SOURCES.get(s.get("source", -1), "UNKNOWN"))
                for s in c.get("synonyms") or ())
            entries[c["name"]] = BrokerConfigEntry(
                c["name"], c["value"], CONFIG_SOURCES.get(c.get("config_source", -1), "UNKNOWN"),
                c["read_only"], c["is_sensitive"], synonyms)
    return entries


def incremental_alter_broker_configs(broker_id: int | None,
                                     changes: Mapping[str, str | None],
                                     validate_only: bool = False) -> Operation:
    """Set each key of broker `broker_id` (None: the cluster-wide default) to its value, or
    delete it for None."""
    name = broker_resource_name(broker_id)
    return (yield from incremental_alter_configs(name, changes, BROKER_RESOURCE, validate_only,
                                                 subject=_subject(name)))


def _subject(name: str) -> str:
    return f"broker {name}" if name else "the cluster-wide broker default"
