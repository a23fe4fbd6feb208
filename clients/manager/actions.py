"""The console's actions that change the cluster: each is a POST carrying the page's CSRF
token, asks for confirmation first, is logged, and shows Kafka's error when refused."""

from __future__ import annotations

import hmac
import logging
from dataclasses import dataclass
from typing import Mapping
from urllib.parse import parse_qs

from clients.admin import NewTopic
from clients.manager.gather import ClusterReader

logger = logging.getLogger(__name__)


class ActionError(Exception):
    """A form the action cannot use; shown to the user, nothing changed."""


@dataclass(frozen=True)
class Action:
    """A parsed action: what the confirmation page says, and the fields to send back."""

    kind: str
    summary: str
    fields: Mapping[str, str]


def parse_form(body: bytes) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body, the last value of each field."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise ActionError("the form is not UTF-8") from None
    return {key: values[-1] for key, values in parse_qs(text, keep_blank_values=True).items()}


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


def describe(kind: str, form: Mapping[str, str]) -> Action:
    """Check an action's form and say what it will do."""
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
        else:
            await admin.create_partitions({fields["topic"]: int(fields["partitions"])})
            done = f"Topic {fields['topic']} now has {fields['partitions']} partitions."
    logger.info("action %s done: %s", action.kind, done)
    return done
