"""Pure helpers behind `raftka groups`: computing reset targets and laying out Kafka's
kafka-consumer-groups.sh tables."""

from __future__ import annotations

from datetime import datetime
from typing import Iterable, Mapping, Sequence

from clients.admin.group_operations import GroupMember
from clients.consumer.group.protocol import TopicPartition

DESCRIBE_OFFSETS_HEADER = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET",
                           "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID")
DESCRIBE_MEMBERS_HEADER = ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
DESCRIBE_STATE_HEADER = ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE",
                         "#MEMBERS")
RESET_HEADER = ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
INACTIVE_STATES = ("Empty", "Dead")


def offset_rows(group: str, committed: Mapping[TopicPartition, int],
                log_end: Mapping[TopicPartition, int], members: Sequence[GroupMember]
                ) -> list[tuple[str, ...]]:
    """Kafka's offsets view: assigned partitions with their owner, then committed partitions
    no member owns (owner "-"); LAG is LOG-END-OFFSET minus CURRENT-OFFSET."""
    rows: list[tuple[str, ...]] = []
    owners: dict[TopicPartition, GroupMember] = {tp: m for m in members for tp in m.assignment}
    for tp in sorted(set(committed) | set(owners)):
        current = committed.get(tp)
        end = log_end.get(tp)
        lag = "-" if current is None or end is None else str(max(end - current, 0))
        owner = owners.get(tp)
        rows.append((group, tp[0], str(tp[1]), "-" if current is None else str(current),
                     "-" if end is None else str(end), lag,
                     owner.member_id if owner else "-", owner.host if owner else "-",
                     owner.client_id if owner else "-"))
    return rows


def format_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Left-aligned columns separated by one space, as Kafka prints them."""
    table = [tuple(header), *(tuple(r) for r in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    return "\n".join(" ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
                     for row in table)


def parse_datetime_ms(text: str) -> int:
    """`--to-datetime` (ISO 8601; local time without a zone) as epoch milliseconds."""
    value = text.strip()
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    return int(datetime.fromisoformat(value).timestamp() * 1000)


def clamp(offset: int, earliest: int, latest: int) -> int:
    """Kafka keeps reset targets inside the log: below start -> start, past end -> end."""
    return max(earliest, min(offset, latest))


def shifted(current: int | None, shift: int, earliest: int, latest: int) -> int:
    """`--shift-by`: from the committed offset (the log start when none), clamped."""
    base = earliest if current is None else current
    return clamp(base + shift, earliest, latest)
