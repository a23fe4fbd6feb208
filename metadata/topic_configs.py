"""Kafka's topic-level configs: names, types, defaults, validators and broker synonyms.

Pure and I/O-free. Shared by the controller (validating CreateTopics and
IncrementalAlterConfigs), the broker config (broker-level defaults) and the log.

Values are parsed from the strings Kafka clients send: ``int``/``long`` to int, ``double`` to
float, ``boolean`` to bool, ``list`` to list[str], ``string`` to str. A topic value comes
from, highest priority first: the topic override, the broker-level synonym(s), Kafka's
default (`metadata.topic_config_layers` orders a node's broker-level sources).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

# LegacyRecord.RECORD_OVERHEAD_V0: Kafka's lower bound for segment.bytes.
_MIN_SEGMENT_BYTES = 14


class ConfigValidationError(ValueError):
    """A config name is unknown or its value is invalid; the message names the key."""


@dataclass(frozen=True)
class ConfigDef:
    """One topic config as Kafka defines it."""

    name: str
    type: str
    default: object
    broker_synonym: str | None
    doc: str
    validate: Callable[[object], None]


def _no_check(value: object) -> None:
    return None


def _at_least(minimum: float) -> Callable[[object], None]:
    def check(value: object) -> None:
        if value < minimum:  # type: ignore[operator]
            raise ConfigValidationError(f"value {value} must be at least {minimum}")

    return check


def _between(low: float, high: float) -> Callable[[object], None]:
    def check(value: object) -> None:
        if not low <= value <= high:  # type: ignore[operator]
            raise ConfigValidationError(f"value {value} must be between {low} and {high}")

    return check


def _one_of(*allowed: str) -> Callable[[object], None]:
    def check(value: object) -> None:
        if value not in allowed:
            raise ConfigValidationError(f"value {value!r} must be one of {', '.join(allowed)}")

    return check


def _each_of(*allowed: str) -> Callable[[object], None]:
    def check(value: object) -> None:
        for item in value:  # type: ignore[attr-defined]
            if item not in allowed:
                raise ConfigValidationError(
                    f"list item {item!r} must be one of {', '.join(allowed)}"
                )

    return check


def _throttled_replicas(value: object) -> None:
    """Kafka's ThrottledReplicaListValidator: "*" alone, or partition:broker items."""
    items = list(value)  # type: ignore[call-overload]
    if items == ["*"]:
        return
    for item in items:
        partition, sep, broker = str(item).partition(":")
        if not (sep and partition.strip().isdigit() and broker.strip().isdigit()):
            raise ConfigValidationError(
                "must be the literal '*' or a list of replicas in the following format: "
                "[partitionId]:[brokerId],[partitionId]:[brokerId],...")


def _gzip_level(value: object) -> None:
    if value != -1 and not 1 <= value <= 9:  # type: ignore[operator]
        raise ConfigValidationError(f"value {value} must be -1 or between 1 and 9")


_DEFS: tuple[ConfigDef, ...] = (
    ConfigDef("cleanup.policy", "list", ["delete"], "log.cleanup.policy",
              "Retention policy for old segments: delete, compact, or both.",
              _each_of("delete", "compact")),
    ConfigDef("compression.type", "string", "producer", "compression.type",
              "Final compression codec for the topic; 'producer' keeps the producer's.",
              _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    ConfigDef("compression.gzip.level", "int", -1, "compression.gzip.level",
              "gzip level when compression.type is gzip.", _gzip_level),
    ConfigDef("compression.lz4.level", "int", 9, "compression.lz4.level",
              "lz4 level when compression.type is lz4.", _between(1, 17)),
    ConfigDef("compression.zstd.level", "int", 3, "compression.zstd.level",
              "zstd level when compression.type is zstd.", _between(-131072, 22)),
    ConfigDef("delete.retention.ms", "long", 86400000, "log.cleaner.delete.retention.ms",
              "How long tombstones are kept in compacted topics.", _at_least(0)),
    ConfigDef("file.delete.delay.ms", "long", 60000, "log.segment.delete.delay.ms",
              "Delay before a deleted segment's files are removed.", _at_least(0)),
    ConfigDef("flush.messages", "long", LONG_MAX, "log.flush.interval.messages",
              "Messages appended between forced fsyncs (1 = fsync every append).",
              _at_least(1)),
    ConfigDef("flush.ms", "long", LONG_MAX, "log.flush.interval.ms",
              "Milliseconds between forced fsyncs.", _at_least(0)),
    ConfigDef("follower.replication.throttled.replicas", "list", [], None,
              "Replicas (partition:broker, or *) whose fetching from the leader is throttled "
              "by follower.replication.throttled.rate.", _throttled_replicas),
    ConfigDef("index.interval.bytes", "int", 4096, "log.index.interval.bytes",
              "Bytes appended between offset-index entries.", _at_least(0)),
    ConfigDef("leader.replication.throttled.replicas", "list", [], None,
              "Replicas (partition:broker, or *) that, as leaders, serve followers outside the "
              "ISR within leader.replication.throttled.rate.", _throttled_replicas),
    ConfigDef("max.compaction.lag.ms", "long", LONG_MAX, "log.cleaner.max.compaction.lag.ms",
              "Longest time a message stays ineligible for compaction.", _at_least(1)),
    ConfigDef("max.message.bytes", "int", 1048588, "message.max.bytes",
              "Largest record batch size the topic accepts.", _at_least(0)),
    ConfigDef("message.timestamp.after.max.ms", "long", 3600000,
              "log.message.timestamp.after.max.ms",
              "How far a CreateTime timestamp may be ahead of the broker's clock.",
              _at_least(0)),
    ConfigDef("message.timestamp.before.max.ms", "long", LONG_MAX,
              "log.message.timestamp.before.max.ms",
              "How far a CreateTime timestamp may be behind the broker's clock.",
              _at_least(0)),
    ConfigDef("message.timestamp.type", "string", "CreateTime", "log.message.timestamp.type",
              "CreateTime keeps the producer's timestamp; LogAppendTime stamps the broker's.",
              _one_of("CreateTime", "LogAppendTime")),
    ConfigDef("min.cleanable.dirty.ratio", "double", 0.5, "log.cleaner.min.cleanable.ratio",
              "Dirty fraction of the log that makes it eligible for cleaning.", _between(0, 1)),
    ConfigDef("min.compaction.lag.ms", "long", 0, "log.cleaner.min.compaction.lag.ms",
              "Shortest time a message stays uncompacted.", _at_least(0)),
    ConfigDef("min.insync.replicas", "int", 1, "min.insync.replicas",
              "Fewest in-sync replicas an acks=all write needs.", _at_least(1)),
    ConfigDef("preallocate", "boolean", False, "log.preallocate",
              "Reserve disk blocks for a whole segment when it is first written.", _no_check),
    ConfigDef("retention.bytes", "long", -1, "log.retention.bytes",
              "Largest partition size before old segments are deleted; -1 for no limit.",
              _no_check),
    ConfigDef("retention.ms", "long", 604800000, "log.retention.ms",
              "Age after which segments are deleted; -1 for no limit.", _at_least(-1)),
    ConfigDef("segment.bytes", "int", 1073741824, "log.segment.bytes",
              "Segment file size at which the log rolls.", _at_least(_MIN_SEGMENT_BYTES)),
    ConfigDef("segment.index.bytes", "int", 10485760, "log.index.size.max.bytes",
              "Size of the offset and time index files.", _at_least(4)),
    ConfigDef("segment.jitter.ms", "long", 0, "log.roll.jitter.ms",
              "Random jitter subtracted from segment.ms.", _at_least(0)),
    ConfigDef("segment.ms", "long", 604800000, "log.roll.ms",
              "Age at which the log rolls even if the segment is not full.", _at_least(1)),
    ConfigDef("unclean.leader.election.enable", "boolean", False,
              "unclean.leader.election.enable",
              "Allow out-of-sync replicas to become leader as a last resort.", _no_check),
)

TOPIC_CONFIGS: Mapping[str, ConfigDef] = MappingProxyType({d.name: d for d in _DEFS})

# Broker keys in other units, highest priority first (Kafka: ms beats minutes beats hours).
_UNIT_SYNONYMS: Mapping[str, tuple[tuple[str, int], ...]] = MappingProxyType({
    "retention.ms": (("log.retention.ms", 1), ("log.retention.minutes", 60_000),
                     ("log.retention.hours", 3_600_000)),
    "segment.ms": (("log.roll.ms", 1), ("log.roll.hours", 3_600_000)),
    "segment.jitter.ms": (("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", 3_600_000)),
})


def broker_synonyms(name: str) -> tuple[str, ...]:
    """Broker-level keys that supply ``name``'s default, highest priority first."""
    if name in _UNIT_SYNONYMS:
        return tuple(key for key, _ in _UNIT_SYNONYMS[name])
    synonym = TOPIC_CONFIGS[name].broker_synonym
    return (synonym,) if synonym else ()


def _parse_number(kind: str, raw: str) -> int | float:
    text = raw.strip()
    if kind == "double":
        return float(text)
    value = int(text)
    low, high = (INT_MIN, INT_MAX) if kind == "int" else (LONG_MIN, LONG_MAX)
    if not low <= value <= high:
        raise ValueError(f"out of range for {kind}")
    return value


def _parse_value(definition: ConfigDef, raw: str) -> object:
    kind = definition.type
    if kind in ("int", "long", "double"):
        return _parse_number(kind, raw)
    if kind == "boolean":
        text = raw.strip().lower()
        if text not in ("true", "false"):
            raise ValueError("expected true or false")
        return text == "true"
    if kind == "list":
        return [item.strip() for item in raw.split(",") if item.strip()]
    return raw.strip()


def _parse_as(definition: ConfigDef, key: str, raw: str, scale: int = 1) -> object:
    try:
        value = _parse_value(definition, raw)
    except ValueError as exc:
        raise ConfigValidationError(
            f"invalid value {raw!r} for configuration {key}: {exc}"
        ) from None
    if scale != 1 and isinstance(value, int) and value > 0:
        value = min(value * scale, LONG_MAX)
    try:
        definition.validate(value)
    except ConfigValidationError as exc:
        raise ConfigValidationError(f"invalid value {raw!r} for configuration {key}: {exc}") from None
    return value


def parse_topic_config(name: str, raw: str) -> object:
    """Parse and validate one topic config value; errors name the key."""
    definition = TOPIC_CONFIGS.get(name)
    if definition is None:
        raise ConfigValidationError(f"unknown topic configuration {name}")
    return _parse_as(definition, name, raw)


def _broker_default(name: str, broker_defaults: Mapping[str, str]) -> object | None:
    definition = TOPIC_CONFIGS[name]
    units = _UNIT_SYNONYMS.get(name)
    if units is None:
        units = ((definition.broker_synonym, 1),) if definition.broker_synonym else ()
    for key, scale in units:
        if key in broker_defaults:
            return _parse_as(definition, key, broker_defaults[key], scale)
    return None


def parse_broker_default(name: str, key: str, raw: str) -> object:
    """Parse broker key ``key``'s value as the default of topic config ``name`` (hours and
    minutes converted to ms); ConfigValidationError names the key."""
    value = _broker_default(name, {key: raw})
    if value is None:
        raise ConfigValidationError(f"{key} is not a broker synonym of {name}")
    return value


def default_text(name: str) -> str | None:
    """Topic config ``name``'s default as Kafka prints it."""
    default = TOPIC_CONFIGS[name].default
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, list):
        return ",".join(str(item) for item in default)
    return None if default is None else str(default)


def broker_default_text(name: str, key: str) -> str | None:
    """The default of broker synonym ``key`` of topic config ``name``, as Kafka prints it;
    None where the key has none (of several unit synonyms only the coarsest carries the
    default: log.retention.hours, not log.retention.ms)."""
    synonyms = broker_synonyms(name)
    if len(synonyms) > 1 and key != synonyms[-1]:
        return None
    scale = dict(_UNIT_SYNONYMS.get(name, ())).get(key, 1)
    if scale != 1:
        return str(int(TOPIC_CONFIGS[name].default) // scale)  # type: ignore[call-overload]
    return default_text(name)


def effective_topic_config(
    overrides: Mapping[str, str], broker_defaults: Mapping[str, str] = MappingProxyType({})
) -> dict[str, object]:
    """Every topic config's parsed value: override, else broker synonym, else Kafka default.

    Unknown override names raise; broker keys that are not topic synonyms are ignored.
    """
    result: dict[str, object] = {}
    for name, definition in TOPIC_CONFIGS.items():
        value = _broker_default(name, broker_defaults)
        result[name] = definition.default if value is None else value
        if isinstance(result[name], list):
            result[name] = list(result[name])  # type: ignore[arg-type]
    for name, raw in overrides.items():
        result[name] = parse_topic_config(name, raw)
    return result
