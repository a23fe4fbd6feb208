"""The console's actions that change the cluster: each is a POST carrying the page's CSRF
token, asks for confirmation first, is logged, and shows Kafka's error when refused."""

from __future__ import annotations

import hmac
import logging
from dataclasses import dataclass
from typing import Any, Mapping, Sequence
from urllib.parse import parse_qs

from clients.admin import NewTopic
from clients.manager.gather import ClusterReader
from clients.manager.reassign_plan import (Layout, PlanError, decode_plan, encode_plan,
                                           generate_plan)
from clients.protocol import ErrorCode, KafkaError

logger = logging.getLogger(__name__)


class ActionError(Exception):
    """A form the action cannot use; shown to the user, nothing changed."""


@dataclass(frozen=True)
class Action:
    """A parsed action: what the confirmation page says, and the fields to send back."""

    kind: str
    summary: str
    fields: Mapping[str, str]
    # (partition, replicas now, replicas after) rows the confirmation page shows
    plan: Sequence[tuple[int, str, str]] = ()


# Fields a form may repeat (checkboxes); their values are joined with commas.
REPEATED_FIELDS = frozenset({"brokers"})


def parse_form(body: bytes) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body, the last value of each field."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise ActionError("the form is not UTF-8") from None
    return {key: ",".join(values) if key in REPEATED_FIELDS else values[-1]
            for key, values in parse_qs(text, keep_blank_values=True).items()}


def _brokers(text: str) -> list[int]:
    try:
        return sorted({int(b) for b in text.split(",") if b.strip()})
    except ValueError:
        raise ActionError(f"brokers must be broker ids, not {text!r}") from None


def _reassignment(form: Mapping[str, str], layout: Layout) -> Action:
    """The plan to confirm: generated from the chosen brokers, or (when confirming) the
    plan the confirmation page showed."""
    name = form.get("topic", "").strip()
    try:
        if form.get("plan"):
            plan = decode_plan(form["plan"])
            unknown = sorted(set(plan) - set(layout))
            if unknown:
                raise ActionError(f"topic {name} has no partition {unknown[0]}")
        else:
            plan = generate_plan(layout, _brokers(form.get("brokers", "")))
    except PlanError as exc:
        raise ActionError(str(exc)) from None
    if not plan:
        raise ActionError(f"topic {name}'s replicas are already spread over those brokers: "
                          f"nothing to move")
    show = ", ".join
    rows = [(p, show(map(str, layout[p])), show(map(str, plan[p]))) for p in sorted(plan)]
    return Action("reassign-partitions",
                  f"Move the replicas of {len(plan)} of topic {name}'s {len(layout)} "
                  f"partitions", {"topic": name, "plan": encode_plan(plan)}, rows)


def token_matches(form: Mapping[str, str], token: str) -> bool:
    return hmac.compare_digest(form.get("csrf", "").encode(), token.encode())


def _int(form: Mapping[str, str], name: str, minimum: int) -> int:
    text = form.get(name, "").strip()
    try:
        value = int(text)
    except ValueError:
        raise ActionError(f"{name} must be an integer, not {text!r}") from None
    if value < minimum:
        raise ActionError(f"{name} must be at least {minimum}")
    return value


def parse_configs(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines (blank lines ignored)."""
    configs: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ActionError(f"config line {line.strip()!r}: expected KEY=VALUE")
        configs[key.strip()] = value.strip()
    return configs


def describe(kind: str, form: Mapping[str, str], layout: Layout | None = None) -> Action:
    """Check an action's form and say what it will do (a reassignment needs the topic's
    replica ``layout``)."""
    if kind == "create-topic":
        name = form.get("topic", "").strip()
        if not name:
            raise ActionError("topic is required")
        partitions = _int(form, "partitions", 1)
        replication = _int(form, "replication_factor", 1)
        configs = parse_configs(form.get("configs", ""))
        listed = ", ".join(f"{k}={v}" for k, v in sorted(configs.items())) or "defaults"
        return Action(kind, f"Create topic {name} with {partitions} partitions, replication "
                            f"factor {replication}, configs: {listed}",
                      {"topic": name, "partitions": str(partitions),
                       "replication_factor": str(replication),
                       "configs": form.get("configs", "")})
    if kind == "add-partitions":
        name = form.get("topic", "").strip()
        if not name:
            raise ActionError("topic is required")
        total = _int(form, "partitions", 1)
        return Action(kind, f"Raise topic {name} to {total} partitions",
                      {"topic": name, "partitions": str(total)})
    if kind == "reassign-partitions" and layout is not None:
        return _reassignment(form, layout)
    raise ActionError(f"unknown action {kind!r}")


async def execute(reader: ClusterReader, action: Action) -> str:
    """Run a confirmed action; KafkaError when the cluster refuses it. The result line."""
    logger.info("action %s: %s", action.kind, action.summary)
    fields = action.fields
    async with reader.turn() as admin:
        if action.kind == "create-topic":
            await admin.create_topics([NewTopic(
                fields["topic"], int(fields["partitions"]), int(fields["replication_factor"]),
                parse_configs(fields["configs"]))])
            done = f"Created topic {fields['topic']}."
        elif action.kind == "add-partitions":
            await admin.create_partitions({fields["topic"]: int(fields["partitions"])})
            done = f"Topic {fields['topic']} now has {fields['partitions']} partitions."
        else:
            done = await _start_reassignment(admin, fields["topic"],
                                             decode_plan(fields["plan"]))
    logger.info("action %s done: %s", action.kind, done)
    return done


async def _start_reassignment(admin: Any, topic: str, plan: Mapping[int, Sequence[int]]
                              ) -> str:
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
