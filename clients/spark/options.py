"""The options of the ``raftka`` data source, parsed and checked (pure, no I/O).

Names, meanings and defaults are those of Spark's own Kafka source. Every refusal raises
``SparkOptionError`` naming the option at fault. The sink's options: ``sink_options``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from clients.spark.errors import SparkOptionError
from clients.spark.security import check_security_options

EARLIEST = -2
LATEST = -1

# Consumer settings the source manages itself, as Spark's Kafka source refuses them.
_FORBIDDEN_CONSUMER_KEYS = {
    "auto.offset.reset": "set the source option 'startingOffsets' instead",
    "enable.auto.commit": "the source commits offsets itself",
    "key.deserializer": "keys are always returned as binary",
    "value.deserializer": "values are always returned as binary",
    "interceptor.classes": "interceptors are not supported",
}
_STREAM_ONLY_REFUSED = ("endingOffsets", "endingOffsetsByTimestamp", "endingTimestamp")
_BATCH_REFUSED = ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay")
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h|d)?\s*$", re.IGNORECASE)
_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000,
                "d": 86_400_000}


@dataclass(frozen=True)
class OffsetSpec:
    """Where reading starts or ends: ``kind`` is earliest, latest, offsets (``offsets``:
    topic -> partition -> offset, -2/-1 for earliest/latest), timestamps (``timestamps``:
    topic -> partition -> ms) or timestamp (``timestamp``: one ms for every partition)."""

    kind: str
    offsets: dict[str, dict[int, int]] = field(default_factory=dict)
    timestamps: dict[str, dict[int, int]] = field(default_factory=dict)
    timestamp: int | None = None


@dataclass(frozen=True)
class TopicSelection:
    """``subscribe`` (topics), ``subscribePattern`` (pattern) or ``assign`` (partitions)."""

    kind: str
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    partitions: tuple[tuple[str, int], ...] = ()

    def matches(self, topic: str) -> bool:
        """Whether ``topic`` belongs to a subscription (Java's ``matches``: the whole name)."""
        if self.kind == "subscribe":
            return topic in self.topics
        if self.kind == "subscribePattern":
            assert self.pattern is not None
            return re.fullmatch(self.pattern, topic) is not None
        return any(t == topic for t, _ in self.partitions)


@dataclass(frozen=True)
class SourceOptions:
    """The source's settings, checked for a batch or a streaming query."""

    selection: TopicSelection
    starting: OffsetSpec
    ending: OffsetSpec
    by_timestamp_strategy: str
    fail_on_data_loss: bool
    max_offsets_per_trigger: int | None
    min_offsets_per_trigger: int | None
    max_trigger_delay_ms: int
    min_partitions: int | None
    max_records_per_partition: int | None
    group_id_prefix: str
    group_id: str | None
    include_headers: bool
    read_committed: bool
    fetch_offset_retries: int
    fetch_offset_retry_interval_ms: int
    poll_timeout_ms: int
    kafka: dict[str, str]

    @property
    def bootstrap_servers(self) -> str:
        return self.kafka["bootstrap.servers"]


def lookup_options(options: Mapping[str, str]) -> dict[str, str]:
    # Spark's options are case-insensitive; keep the first spelling the user gave.
    return {str(k).lower(): str(v) for k, v in options.items()}


def get_option(opts: dict[str, str], name: str) -> str | None:
    return opts.get(name.lower())


def int_option(opts: dict[str, str], name: str, default: int | None, minimum: int
                ) -> int | None:
    raw = get_option(opts, name)
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise SparkOptionError(f"option '{name}' must be an integer, got {raw!r}") from None
    if value < minimum:
        raise SparkOptionError(f"option '{name}' must be at least {minimum}, got {value}")
    return value


def bool_option(opts: dict[str, str], name: str, default: bool) -> bool:
    raw = get_option(opts, name)
    if raw is None:
        return default
    text = raw.strip().lower()
    if text not in ("true", "false"):
        raise SparkOptionError(f"option '{name}' must be true or false, got {raw!r}")
    return text == "true"


def parse_duration_ms(name: str, raw: str) -> int:
    """A duration such as ``15m``, ``30s``, ``500ms`` or a bare number of ms."""
    match = _DURATION.match(raw)
    if match is None:
        raise SparkOptionError(f"option '{name}' must be a duration such as 15m, 30s or "
                               f"500ms, got {raw!r}")
    return int(match.group(1)) * _DURATION_MS[(match.group(2) or "ms").lower()]


def _json_object(name: str, raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise SparkOptionError(f"option '{name}' must be a JSON object such as "
                               f'{{"topic":{{"0":23}}}}, got {raw!r}')
    return value


def _per_partition(name: str, raw: str) -> dict[str, dict[int, int]]:
    """``{"topic": {"0": n, ...}, ...}`` as topic -> partition -> int."""
    out: dict[str, dict[int, int]] = {}
    for topic, partitions in _json_object(name, raw).items():
        if not isinstance(partitions, dict):
            raise SparkOptionError(f"option '{name}': topic {topic!r} must map partitions "
                                   f"to numbers, got {partitions!r}")
        per: dict[int, int] = {}
        for partition, value in partitions.items():
            try:
                per[int(partition)] = int(value)
            except (TypeError, ValueError):
                raise SparkOptionError(f"option '{name}': {topic}-{partition} must be a "
                                       f"number, got {value!r}") from None
        out[str(topic)] = per
    return out


def _selection(opts: dict[str, str]) -> TopicSelection:
    given = [n for n in ("subscribe", "subscribePattern", "assign") if get_option(opts, n) is not None]
    if not given:
        raise SparkOptionError("one of the options 'subscribe', 'subscribePattern' or "
                               "'assign' must be given")
    if len(given) > 1:
        raise SparkOptionError("only one of the options 'subscribe', 'subscribePattern' and "
                               f"'assign' may be given, got {', '.join(repr(g) for g in given)}")
    name = given[0]
    raw = get_option(opts, name) or ""
    if name == "subscribe":
        topics = tuple(t.strip() for t in raw.split(",") if t.strip())
        if not topics:
            raise SparkOptionError("option 'subscribe' must list at least one topic")
        return TopicSelection("subscribe", topics=topics)
    if name == "subscribePattern":
        if not raw.strip():
            raise SparkOptionError("option 'subscribePattern' must not be empty")
        try:
            re.compile(raw)
        except re.error as exc:
            raise SparkOptionError(f"option 'subscribePattern' is not a valid pattern: "
                                   f"{exc}") from None
        return TopicSelection("subscribePattern", pattern=raw)
    assigned = _json_object("assign", raw)
    partitions: list[tuple[str, int]] = []
    for topic, numbers in assigned.items():
        if not isinstance(numbers, list) or not all(isinstance(n, int) for n in numbers):
            raise SparkOptionError(f"option 'assign' must look like "
                                   f'{{"topic":[0,1]}}, got {raw!r}')
        partitions.extend((str(topic), n) for n in numbers)
    if not partitions:
        raise SparkOptionError("option 'assign' must name at least one partition")
    return TopicSelection("assign", partitions=tuple(sorted(set(partitions))))


def _offset_spec(opts: dict[str, str], prefix: str, default: str) -> OffsetSpec:
    """``prefix`` is starting or ending; precedence as Spark: the global timestamp, then
    per-partition timestamps, then offsets."""
    global_name, by_ts_name, offsets_name = (f"{prefix}Timestamp",
                                             f"{prefix}OffsetsByTimestamp", f"{prefix}Offsets")
    raw = get_option(opts, global_name)
    if raw is not None:
        try:
            return OffsetSpec("timestamp", timestamp=int(raw.strip()))
        except ValueError:
            raise SparkOptionError(f"option '{global_name}' must be a timestamp in ms, "
                                   f"got {raw!r}") from None
    raw = get_option(opts, by_ts_name)
    if raw is not None:
        return OffsetSpec("timestamps", timestamps=_per_partition(by_ts_name, raw))
    raw = get_option(opts, offsets_name)
    text = (raw if raw is not None else default).strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetSpec(text.lower())
    return OffsetSpec("offsets", offsets=_per_partition(offsets_name, text))


def kafka_params(opts: dict[str, str], original: Mapping[str, str],
                  forbidden: Mapping[str, str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for key, value in original.items():
        if not str(key).lower().startswith("kafka."):
            continue
        name = str(key)[len("kafka."):]
        reason = forbidden.get(name.lower())
        if reason is not None:
            raise SparkOptionError(f"option 'kafka.{name}' is not supported: {reason}")
        params[name] = str(value)
    if not params.get("bootstrap.servers", "").strip():
        raise SparkOptionError("option 'kafka.bootstrap.servers' must be given")
    check_security_options(params)
    return params


def parse_source_options(options: Mapping[str, str], streaming: bool) -> SourceOptions:
    """Check and parse the options of a batch (``streaming=False``) or streaming read."""
    opts = lookup_options(options)
    refused = _BATCH_REFUSED if not streaming else _STREAM_ONLY_REFUSED
    for name in refused:
        if get_option(opts, name) is not None:
            kind = "batch" if not streaming else "streaming"
            raise SparkOptionError(f"option '{name}' is not valid in {kind} queries")
    kafka = kafka_params(opts, options, _FORBIDDEN_CONSUMER_KEYS)
    isolation = kafka.pop("isolation.level", "read_uncommitted").strip().lower()
    if isolation not in ("read_uncommitted", "read_committed"):
        raise SparkOptionError("option 'kafka.isolation.level' must be read_uncommitted or "
                               f"read_committed, got {isolation!r}")
    group_id = kafka.pop("group.id", None)
    starting = _offset_spec(opts, "starting", "latest" if streaming else "earliest")
    ending = _offset_spec(opts, "ending", "latest")
    if not streaming:
        _check_batch_bounds(starting, ending)
    strategy = (get_option(opts, "startingOffsetsByTimestampStrategy") or "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise SparkOptionError("option 'startingOffsetsByTimestampStrategy' must be error or "
                               f"latest, got {strategy!r}")
    delay = get_option(opts, "maxTriggerDelay")
    return SourceOptions(
        selection=_selection(opts),
        starting=starting,
        ending=ending,
        by_timestamp_strategy=strategy,
        fail_on_data_loss=bool_option(opts, "failOnDataLoss", True),
        max_offsets_per_trigger=int_option(opts, "maxOffsetsPerTrigger", None, 1),
        min_offsets_per_trigger=int_option(opts, "minOffsetsPerTrigger", None, 1),
        max_trigger_delay_ms=parse_duration_ms("maxTriggerDelay", delay or "15m"),
        min_partitions=int_option(opts, "minPartitions", None, 1),
        max_records_per_partition=int_option(opts, "maxRecordsPerPartition", None, 1),
        group_id_prefix=get_option(opts, "groupIdPrefix") or (
            "spark-kafka-source" if streaming else "spark-kafka-relation"),
        group_id=group_id,
        include_headers=bool_option(opts, "includeHeaders", False),
        read_committed=isolation == "read_committed",
        fetch_offset_retries=int_option(opts, "fetchOffset.numRetries", 3, 0) or 0,
        fetch_offset_retry_interval_ms=int_option(opts, "fetchOffset.retryIntervalMs", 10, 0)
        or 0,
        poll_timeout_ms=int_option(opts, "kafkaConsumer.pollTimeoutMs", 120_000, 1)
        or 120_000,
        kafka=kafka,
    )


def _check_batch_bounds(starting: OffsetSpec, ending: OffsetSpec) -> None:
    if starting.kind == "latest":
        raise SparkOptionError("option 'startingOffsets' cannot be latest for batch queries")
    if ending.kind == "earliest":
        raise SparkOptionError("option 'endingOffsets' cannot be earliest for batch queries")
    for topic, partitions in starting.offsets.items():
        for partition, offset in partitions.items():
            if offset == LATEST:
                raise SparkOptionError(f"option 'startingOffsets': {topic}-{partition} cannot "
                                       "start at latest (-1) in a batch query")
    for topic, partitions in ending.offsets.items():
        for partition, offset in partitions.items():
            if offset == EARLIEST:
                raise SparkOptionError(f"option 'endingOffsets': {topic}-{partition} cannot "
                                       "end at earliest (-2) in a batch query")
