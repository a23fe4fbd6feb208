"""The console's actions that change the cluster: each is a POST carrying the page's CSRF
token, asks for confirmation first, is logged, and shows Kafka's error when refused.

This module checks a form and says what the action will do (pure); ``action_runs`` reads
what a plan needs from the cluster and runs confirmed actions."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Mapping, Sequence
from urllib.parse import parse_qs, quote

from clients.manager.reassign_plan import (Layout, PlanError, decode_plan, encode_plan,
                                           generate_plan)


class ActionError(Exception):
    """A form the action cannot use; shown to the user, nothing changed."""


class ActionRefused(Exception):
    """A confirmed action the console refuses to run as things stand (shown like Kafka's
    refusals)."""


@dataclass(frozen=True)
class Action:
    """A parsed action: what the confirmation page says, and the fields to send back."""

    kind: str
    summary: str
    fields: Mapping[str, str]
    # A table the confirmation page shows (a reassignment plan, offsets to reset).
    head: Sequence[str] = ()
    rows: Sequence[Sequence[str]] = ()

    @property
    def back(self) -> str:
        """The page the action started from."""
        if "group" in self.fields:
            return "/groups/" + quote(self.fields["group"], safe="")
        if "topic" in self.fields and self.kind not in ("create-topic", "delete-topic"):
            return "/topics/" + quote(self.fields["topic"], safe="")
        return "/topics"


# Fields a form may repeat (checkboxes); their values are joined with commas.
REPEATED_FIELDS = frozenset({"brokers"})
RESET_TARGETS = ("earliest", "latest", "timestamp", "offset")


def parse_form(body: bytes) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body, the last value of each field."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise ActionError("the form is not UTF-8") from None
    return {key: ",".join(values) if key in REPEATED_FIELDS else values[-1]
            for key, values in parse_qs(text, keep_blank_values=True).items()}


def token_matches(form: Mapping[str, str], token: str) -> bool:
    return hmac.compare_digest(form.get("csrf", "").encode(), token.encode())


INT32_MAX = 2**31 - 1
INT16_MAX = 2**15 - 1


def _int(form: Mapping[str, str], name: str, minimum: int, maximum: int = INT32_MAX) -> int:
    """The form's integer `name`, within what its field on the wire holds."""
    text = form.get(name, "").strip()
    try:
        value = int(text)
    except ValueError:
        raise ActionError(f"{name} must be an integer, not {text!r}") from None
    if value < minimum:
        raise ActionError(f"{name} must be at least {minimum}")
    if value > maximum:
        raise ActionError(f"{name} must be at most {maximum}")
    return value


def _required(form: Mapping[str, str], name: str) -> str:
    value = form.get(name, "").strip()
    if not value:
        raise ActionError(f"{name} is required")
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


def parse_headers(text: str) -> list[tuple[str, bytes]]:
    """``KEY=VALUE`` lines as record headers (UTF-8 values; a key may repeat)."""
    headers = []
    for line in text.splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ActionError(f"header line {line.strip()!r}: expected KEY=VALUE")
        headers.append((key.strip(), value.encode("utf-8")))
    return headers


def _brokers(text: str) -> list[int]:
    try:
        return sorted({int(b) for b in text.split(",") if b.strip()})
    except ValueError:
        raise ActionError(f"brokers must be broker ids, not {text!r}") from None


def describe_reassignment(form: Mapping[str, str], layout: Layout) -> Action:
    """The plan to confirm: generated from the chosen brokers, or (when confirming) the
    plan the confirmation page showed."""
    name = _required(form, "topic")
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
    rows = [(str(p), show(map(str, layout[p])), show(map(str, plan[p]))) for p in sorted(plan)]
    return Action("reassign-partitions",
                  f"Move the replicas of {len(plan)} of topic {name}'s {len(layout)} "
                  f"partitions", {"topic": name, "plan": encode_plan(plan)},
                  ("Partition", "Replicas now", "Replicas after"), rows)


def reset_target(form: Mapping[str, str]) -> tuple[str, int | None]:
    """(earliest | latest | timestamp | offset, the timestamp in ms or the offset)."""
    to = form.get("to", "").strip()
    if to not in RESET_TARGETS:
        raise ActionError(f"to must be one of {', '.join(RESET_TARGETS)}")
    return to, (_int(form, "value", 0) if to in ("timestamp", "offset") else None)


def encode_offsets(offsets: Mapping[tuple[str, int], int]) -> str:
    """``topic:partition:offset`` items separated by ``;`` (topic names hold neither)."""
    return ";".join(f"{t}:{p}:{o}" for (t, p), o in sorted(offsets.items()))


def decode_offsets(text: str) -> dict[tuple[str, int], int]:
    offsets = {}
    for item in filter(None, text.split(";")):
        parts = item.rsplit(":", 2)
        try:
            if len(parts) != 3 or not parts[0]:
                raise ValueError
            offsets[(parts[0], int(parts[1]))] = int(parts[2])
        except ValueError:
            raise ActionError(
                f"offsets entry {item!r}: expected TOPIC:PARTITION:OFFSET") from None
    if not offsets:
        raise ActionError("no offsets to reset")
    return offsets


def describe_reset(form: Mapping[str, str], current: Mapping[tuple[str, int], int | None],
                   new: Mapping[tuple[str, int], int]) -> Action:
    group = _required(form, "group")
    to, value = reset_target(form)
    where = f"topic {form['topic'].strip()}" if form.get("topic", "").strip() else \
        "every partition it has committed"
    target = to if value is None else f"{to} {value}"
    rows = [(t, str(p), "-" if current.get((t, p)) is None else str(current[(t, p)]), str(o))
            for (t, p), o in sorted(new.items())]
    return Action("reset-offsets", f"Reset group {group}'s offsets on {where} to {target}",
                  {"group": group, "to": to, "value": "" if value is None else str(value),
                   "topic": form.get("topic", "").strip(), "offsets": encode_offsets(new)},
                  ("Topic", "Partition", "Committed now", "Committed after"), rows)


def describe(kind: str, form: Mapping[str, str]) -> Action:
    """Check a form that needs nothing from the cluster and say what it will do."""
    if kind == "create-topic":
        name = _required(form, "topic")
        partitions = _int(form, "partitions", 1)
        replication = _int(form, "replication_factor", 1, INT16_MAX)
        configs = parse_configs(form.get("configs", ""))
        listed = ", ".join(f"{k}={v}" for k, v in sorted(configs.items())) or "defaults"
        return Action(kind, f"Create topic {name} with {partitions} partitions, replication "
                            f"factor {replication}, configs: {listed}",
                      {"topic": name, "partitions": str(partitions),
                       "replication_factor": str(replication),
                       "configs": form.get("configs", "")})
    if kind == "add-partitions":
        name = _required(form, "topic")
        total = _int(form, "partitions", 1)
        return Action(kind, f"Raise topic {name} to {total} partitions",
                      {"topic": name, "partitions": str(total)})
    if kind == "edit-configs":
        name = _required(form, "topic")
        changes = parse_configs(form.get("set", ""))
        removed = sorted({k.strip() for k in form.get("delete", "").split(",") if k.strip()})
        if not changes and not removed:
            raise ActionError("nothing to change: give KEY=VALUE lines or keys to delete")
        said = [f"set {k}={v}" for k, v in sorted(changes.items())]
        said += [f"delete {k} (back to its default)" for k in removed]
        return Action(kind, f"On topic {name}: {', '.join(said)}",
                      {"topic": name, "set": form.get("set", ""), "delete": ",".join(removed)})
    if kind == "delete-topic":
        name = _required(form, "topic")
        return Action(kind, f"Delete topic {name} and all its records", {"topic": name})
    if kind == "elect-leaders":
        name = _required(form, "topic")
        return Action(kind, f"Elect the preferred leader of every partition of topic {name}",
                      {"topic": name})
    if kind == "produce":
        name = _required(form, "topic")
        partition = form.get("partition", "").strip()
        if partition:
            _int(form, "partition", 0)
        headers = parse_headers(form.get("headers", ""))
        where = f"partition {partition}" if partition else "the partition its key picks"
        return Action(kind, f"Produce one record to topic {name} ({where}): key "
                            f"{form.get('key', '')!r}, value {form.get('value', '')!r}, "
                            f"{len(headers)} headers",
                      {"topic": name, "partition": partition, "key": form.get("key", ""),
                       "value": form.get("value", ""), "headers": form.get("headers", "")})
    if kind == "delete-group":
        group = _required(form, "group")
        return Action(kind, f"Delete group {group} and its committed offsets", {"group": group})
    raise ActionError(f"unknown action {kind!r}")
