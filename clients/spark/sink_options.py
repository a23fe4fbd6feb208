"""The options of the ``raftka`` sink, parsed and checked (pure, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from clients.spark.options import (
    SparkOptionError,
    bool_option,
    get_option,
    int_option,
    kafka_params,
    lookup_options,
)

_FORBIDDEN_PRODUCER_KEYS = {
    "key.serializer": "keys are written as binary (cast them first)",
    "value.serializer": "values are written as binary (cast them first)",
    "transactional.id": "with exactlyOnce=true the sink derives one per task itself",
}
DEFAULT_CONTROL_TOPIC = "__raftka_spark_sink_commits"


@dataclass(frozen=True)
class SinkOptions:
    """The sink's settings: the ``topic`` option (it wins over the column), the producer's
    ``kafka.*`` settings and, with ``exactly_once``, the control topic and the write's
    stable id (``exactlyOnceWriteId``, batch writes only; None: one id per write).
    ``crash_before_commit_attempts`` is a fault-injection hook for tests (0: off)."""

    topic: str | None
    kafka: dict[str, str]
    exactly_once: bool = False
    control_topic: str = DEFAULT_CONTROL_TOPIC
    write_id: str | None = None
    crash_before_commit_attempts: int = 0

    @property
    def bootstrap_servers(self) -> str:
        return self.kafka["bootstrap.servers"]


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Check and parse the sink's options."""
    opts = lookup_options(options)
    exactly_once = bool_option(opts, "exactlyOnce", False)
    kafka = kafka_params(opts, options, _FORBIDDEN_PRODUCER_KEYS)
    topic = get_option(opts, "topic")
    if topic is not None and not topic.strip():
        raise SparkOptionError("option 'topic' must not be empty")
    control_topic = (get_option(opts, "exactlyOnceControlTopic") or DEFAULT_CONTROL_TOPIC).strip()
    if not control_topic:
        raise SparkOptionError("option 'exactlyOnceControlTopic' must not be empty")
    write_id = get_option(opts, "exactlyOnceWriteId")
    if write_id is not None and not write_id.strip():
        raise SparkOptionError("option 'exactlyOnceWriteId' must not be empty")
    if not exactly_once:
        for name in ("exactlyOnceControlTopic", "exactlyOnceWriteId"):
            if get_option(opts, name) is not None:
                raise SparkOptionError(f"option '{name}' needs exactlyOnce=true")
    if exactly_once and kafka.get("enable.idempotence", "true").strip().lower() == "false":
        raise SparkOptionError("option 'kafka.enable.idempotence' cannot be false with "
                               "exactlyOnce=true: transactions need an idempotent producer")
    return SinkOptions(
        topic=topic.strip() if topic else None, kafka=kafka, exactly_once=exactly_once,
        control_topic=control_topic, write_id=write_id.strip() if write_id else None,
        crash_before_commit_attempts=int_option(
            opts, "test.crashBeforeCommitAttempts", 0, 0) or 0)
