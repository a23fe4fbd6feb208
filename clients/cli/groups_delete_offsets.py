"""`raftka groups --delete-offsets`: delete a group's committed offsets of some topics or
partitions (OffsetDelete), printing kafka-consumer-groups.sh's TOPIC/PARTITION/STATUS table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from clients.cli.main import CommandError

if TYPE_CHECKING:
    from clients.admin import BlockingAdmin
    from clients.protocol import ErrorCode

MISSING_COLUMN_VALUE = "-"
SUCCESS = "Successful"
# A group-level error ends the request for every partition; these are the group's answers.
GROUP_ERRORS = ("INVALID_GROUP_ID", "GROUP_ID_NOT_FOUND", "GROUP_AUTHORIZATION_FAILED",
                "NON_EMPTY_GROUP")
PARTITION_LEVEL_NOTE = "Encountered some partition-level error, see the follow-up details."


def parse_topic_arguments(values: Iterable[str]) -> tuple[list[tuple[str, int]], list[str]]:
    """`--topic` values (TOPIC or TOPIC:P[,P...]) as named partitions and whole topics."""
    partitions: list[tuple[str, int]] = []
    whole: list[str] = []
    for value in values:
        topic, colon, listed = value.partition(":")
        if not topic:
            raise CommandError(f"--topic {value!r}: the topic name is missing")
        if not colon:
            whole.append(topic)
            continue
        try:
            numbers = [int(p) for p in listed.split(",") if p.strip()]
        except ValueError:
            raise CommandError(f"--topic {value!r}: partitions must be numbers, as in "
                               f"{topic}:0,1") from None
        if not numbers:
            raise CommandError(f"--topic {value!r}: no partition after the colon")
        partitions += [(topic, p) for p in numbers]
    return partitions, whole


def status_of(code: "ErrorCode") -> str:
    """A partition's STATUS cell: Successful, or the error's name and Kafka's message."""
    return SUCCESS if code == 0 else f"Error: {code.name}: {code.message}"


def report(group: str, statuses: Mapping[tuple[str, int], str],
           group_error: "ErrorCode | None") -> tuple[list[str], str | None]:
    """The stdout lines (Kafka's summary line, a blank line and the table; partition -1
    stands for a whole topic that could not be described) and the error line, if any."""
    failed = any(status != SUCCESS for status in statuses.values())
    error: str | None = None
    lines: list[str] = []
    if group_error is not None:
        error = f"Error: {group_error.message}"
    elif failed:
        error = f"Error: {PARTITION_LEVEL_NOTE}"
    else:
        lines.append(f"Request succeeded for deleting offsets from group {group}.")
    width = max([15] + [len(topic) for topic, _ in statuses])
    rows = [("TOPIC", "PARTITION", "STATUS")] + [
        (topic, str(partition) if partition >= 0 else MISSING_COLUMN_VALUE, status)
        for (topic, partition), status in sorted(statuses.items())]
    lines.append("")
    lines += [f"{topic:<{width}} {partition:<10} {status}".rstrip()
              for topic, partition, status in rows]
    return lines, error


def delete_offsets(admin: "BlockingAdmin", group: str, topic_args: Sequence[str]
                   ) -> tuple[list[str], str | None]:
    """Run OffsetDelete for `--topic` values; (stdout lines, error line or None)."""
    from clients.protocol import ErrorCode, KafkaError

    named, whole = parse_topic_arguments(topic_args)
    statuses: dict[tuple[str, int], str] = {}
    partitions = set(named)
    for topic in dict.fromkeys(whole):
        try:
            (described,) = admin.describe_topics([topic])
        except KafkaError as exc:  # as Kafka: that topic's row says why, the rest goes on
            statuses[(topic, -1)] = status_of(exc.code)
            continue
        partitions.update((topic, p.partition) for p in described.partitions)
    group_error: ErrorCode | None = None
    if partitions:
        try:
            codes = admin.delete_group_offsets_each(group, partitions)
        except KafkaError as exc:
            if exc.code.name not in GROUP_ERRORS:
                raise
            group_error = exc.code
            codes = {tp: exc.code for tp in partitions}
        statuses.update((tp, status_of(codes.get(tp, ErrorCode.NONE))) for tp in partitions)
    return report(group, statuses, group_error)
