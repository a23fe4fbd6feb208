"""Runs the console's actions: reads what a plan needs from the cluster (a topic's replicas,
a group's offsets) before the confirmation page, and runs confirmed actions through the
admin client and producer; refusals come back as KafkaError or ActionRefused."""

from __future__ import annotations

import logging
from typing import Any, Mapping

from clients.admin import NewTopic
from clients.admin.cluster_operations import PREFERRED
from clients.admin.operations import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from clients.manager.actions import (Action, ActionError, ActionRefused, decode_offsets,
                                     describe, describe_reassignment, describe_reset,
                                     parse_configs, parse_headers, reset_target)
from clients.manager.gather import ClusterReader
from clients.manager.reassign_plan import decode_plan
from clients.producer import open_producer
from clients.protocol import ErrorCode, KafkaError

logger = logging.getLogger("clients.manager.actions")
TopicPartition = tuple[str, int]
# Kafka resets offsets only of groups without members.
INACTIVE_STATES = ("Empty", "Dead")


async def prepare(reader: ClusterReader, kind: str, form: Mapping[str, str]) -> Action:
    """Check an action's form, reading what its plan needs, and say what it will do."""
    if kind == "reassign-partitions":
        return describe_reassignment(form, await reader.replica_layout(
            form.get("topic", "").strip()))
    if kind == "reset-offsets":
        if form.get("offsets"):  # confirming: the offsets the confirmation page showed
            return describe_reset(form, {}, decode_offsets(form["offsets"]))
        current, new = await _reset_plan(reader, form)
        return describe_reset(form, current, new)
    return describe(kind, form)


def _found(answers: Mapping[TopicPartition, Any]) -> dict[TopicPartition, int | None]:
    result: dict[TopicPartition, int | None] = {}
    for tp, answer in answers.items():
        if isinstance(answer, KafkaError):
            raise answer
        result[tp] = None if answer is None else answer.offset
    return result


async def _reset_plan(reader: ClusterReader, form: Mapping[str, str]
                      ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
    """The group's committed offsets now, and the offsets the reset would commit (Kafka's
    rules: a timestamp past the last record goes to the log end; an offset is clamped into
    the log)."""
    group = form.get("group", "").strip()
    topic = form.get("topic", "").strip()
    to, value = reset_target(form)
    admin = reader.admin
    committed = await admin.list_group_offsets(group)
    if topic:
        described = await admin.describe_topics([topic])
        partitions = [(topic, p.partition) for t in described for p in t.partitions]
    else:
        partitions = sorted(committed)
    if not partitions:
        raise ActionError(f"group {group} has committed no offsets: name a topic")
    ends = _found(await admin.list_offsets({tp: LATEST_TIMESTAMP for tp in partitions}))
    starts = _found(await admin.list_offsets({tp: EARLIEST_TIMESTAMP
                                              for tp in partitions}))
    at = (_found(await admin.list_offsets({tp: value for tp in partitions}))
          if to == "timestamp" and value is not None else {})
    new: dict[TopicPartition, int] = {}
    for tp in partitions:
        start, end = starts.get(tp) or 0, ends.get(tp) or 0
        if to == "earliest":
            new[tp] = start
        elif to == "latest":
            new[tp] = end
        elif to == "timestamp":
            found = at.get(tp)
            new[tp] = end if found is None or found < 0 else found
        else:
            new[tp] = min(max(value or 0, start), end)
    return committed, new


async def execute(reader: ClusterReader, action: Action) -> str:
    """Run a confirmed action: the result line, or KafkaError / ActionRefused."""
    logger.info("action %s: %s", action.kind, action.summary)
    fields = action.fields
    if action.kind == "produce":
        done = await _produce(reader, fields)
    else:
        done = await _run(reader.admin, action.kind, fields)
    logger.info("action %s done: %s", action.kind, done)
    return done


async def _run(admin: Any, kind: str, fields: Mapping[str, str]) -> str:
    topic = fields.get("topic", "")
    if kind == "create-topic":
        await admin.create_topics([NewTopic(topic, int(fields["partitions"]),
                                            int(fields["replication_factor"]),
                                            parse_configs(fields["configs"]))])
        return f"Created topic {topic}."
    if kind == "add-partitions":
        await admin.create_partitions({topic: int(fields["partitions"])})
        return f"Topic {topic} now has {fields['partitions']} partitions."
    if kind == "edit-configs":
        changes: dict[str, str | None] = dict(parse_configs(fields["set"]))
        changes.update({k: None for k in fields["delete"].split(",") if k})
        await admin.incremental_alter_configs(topic, changes)
        return f"Changed {len(changes)} configs of topic {topic}."
    if kind == "delete-topic":
        await admin.delete_topics([topic])
        return f"Deleted topic {topic}."
    if kind == "elect-leaders":
        return await _elect(admin, topic)
    if kind == "reassign-partitions":
        return await _start_reassignment(admin, topic, decode_plan(fields["plan"]))
    group = fields["group"]
    if kind == "delete-group":
        await admin.delete_groups([group])
        return f"Deleted group {group}."
    description = (await admin.describe_groups([group]))[group]
    if isinstance(description, KafkaError):
        raise description
    if description.state not in INACTIVE_STATES:
        raise ActionRefused(f"Offsets can only be reset while group {group} is inactive, "
                            f"but its state is {description.state}: stop its consumers "
                            f"first.")
    offsets = decode_offsets(fields["offsets"])
    await admin.alter_group_offsets(group, offsets)
    return f"Reset group {group}'s offsets on {len(offsets)} partitions."


async def _elect(admin: Any, topic: str) -> str:
    described = await admin.describe_topics([topic])
    partitions = [(topic, p.partition) for t in described for p in t.partitions]
    results = await admin.elect_leaders(PREFERRED, partitions)
    moved = sum(r.error == ErrorCode.NONE for r in results)
    refused = [r for r in results
               if r.error not in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED)]
    if refused:
        raise KafkaError(refused[0].error, "; ".join(
            f"partition {r.partition}: {ErrorCode.from_code(r.error).name}"
            f"{': ' + r.message if r.message else ''}" for r in refused))
    return (f"Preferred leaders elected: {moved} partitions changed leader, "
            f"{len(results) - moved} already led by their preferred replica.")


async def _start_reassignment(admin: Any, topic: str, plan: Mapping[int, Any]) -> str:
    """AlterPartitionReassignments for the plan; KafkaError naming every refused
    partition."""
    results = await admin.alter_partition_reassignments(
        {(topic, p): list(replicas) for p, replicas in plan.items()})
    refused = [r for r in results if r.error_code != ErrorCode.NONE]
    if refused:
        raise KafkaError(refused[0].error_code, "; ".join(
            f"partition {r.partition}: {ErrorCode.from_code(r.error_code).name}"
            f"{': ' + r.error_message if r.error_message else ''}" for r in refused))
    return f"Started moving {len(plan)} partitions of topic {topic}."


async def _produce(reader: ClusterReader, fields: Mapping[str, str]) -> str:
    partition = int(fields["partition"]) if fields["partition"] else None
    key = fields["key"].encode("utf-8") if fields["key"] else None
    async with open_producer(reader.client_config(acks="all")) as producer:
        landed = await producer.send_and_wait(
            fields["topic"], fields["value"].encode("utf-8"), key=key,
            headers=parse_headers(fields["headers"]), partition=partition)
    return (f"Produced a record to {landed.topic} partition {landed.partition} at offset "
            f"{landed.offset}.")
