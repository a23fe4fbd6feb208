"""Kafka's topic name rules."""

from __future__ import annotations

import re

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def topic_name_error(name: str | None) -> str | None:
    """Why `name` is not a legal topic name, or None if it is."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > MAX_NAME_LENGTH:
        return (
            f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, "
            f"topic name: {name}"
        )
    if not _LEGAL.fullmatch(name):
        return (
            f"Topic name {name} is illegal, it contains a character other than "
            "ASCII alphanumerics, '.', '_' and '-'"
        )
    return None


def collision_key(name: str) -> str:
    """Names equal under this key collide in metric names ('.' and '_' are the same)."""
    return name.replace(".", "_")


# The Raft log of the quorum, as Kafka names it: DescribeQuorum asks about its partition 0, and
# its directory under metadata.log.dir is never a partition of the log manager's.
METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
METADATA_DIR_NAME = f"{METADATA_TOPIC}-{METADATA_PARTITION}"
