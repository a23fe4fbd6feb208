"""High watermarks of partitions this broker holds no replica of, for the consumer lag of
the groups it coordinates: read every interval with ListOffsets from their leaders, through
the broker's own inter-broker listener (the cluster routes each request to the leader).

A failed read keeps the previous values and is logged at debug level: lag is a metric, and
a leader that moved answers on the next round.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Awaitable, Callable, Iterable, Mapping

import trio

if TYPE_CHECKING:
    from clients.net import ClientSecurity
    from clients.net.sasl import SaslCredentials

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
# Reads the high watermarks of the given partitions (missing ones had errors).
ReadEndOffsets = Callable[[list[TopicPartition]], Awaitable[Mapping[TopicPartition, int]]]

DEFAULT_INTERVAL_S = 10.0


class RemoteEndOffsets:
    """The last high watermark read for each partition `wanted()` names."""

    def __init__(self, wanted: Callable[[], Iterable[TopicPartition]], read: ReadEndOffsets,
                 interval_s: float = DEFAULT_INTERVAL_S) -> None:
        self._wanted = wanted
        self._read = read
        self.interval_s = interval_s
        self._offsets: dict[TopicPartition, int] = {}

    def end_offset(self, tp: TopicPartition) -> int | None:
        return self._offsets.get(tp)

    async def refresh(self) -> None:
        """Read the wanted partitions' high watermarks now; forget the unwanted ones."""
        wanted = sorted(set(self._wanted()))
        self._offsets = {tp: o for tp, o in self._offsets.items() if tp in set(wanted)}
        if not wanted:
            return
        try:
            self._offsets.update(await self._read(wanted))
        except Exception as exc:  # a metric: keep the old values, try again next round
            logger.debug("cannot read the end offsets of %d partition(s): %s", len(wanted), exc)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
                  ) -> None:
        task_status.started()
        if self.interval_s <= 0 or math.isinf(self.interval_s):
            return
        while True:
            await trio.sleep(self.interval_s)
            await self.refresh()


def admin_end_offsets(bootstrap: str, client_id: str, security: "ClientSecurity | None" = None,
                      sasl: "SaslCredentials | None" = None,
                      timeout_ms: int = int(DEFAULT_INTERVAL_S * 1000)) -> ReadEndOffsets:
    """A reader using the admin client's ListOffsets (latest: the high watermark), over a
    listener with `security` and, on a SASL listener, authenticating with `sasl` (the
    broker's inter-broker credentials); one read gives up after `timeout_ms`."""
    from clients.admin import Admin
    from clients.admin.admin_config import AdminConfig
    from clients.admin.operations import LATEST_TIMESTAMP, ListedOffset
    from clients.net import PLAINTEXT, parse_bootstrap_servers

    config = AdminConfig(parse_bootstrap_servers(bootstrap), client_id,
                         request_timeout_ms=timeout_ms, connect_timeout_ms=timeout_ms,
                         default_api_timeout_ms=timeout_ms,
                         security=security or PLAINTEXT, sasl=sasl)

    async def read(partitions: list[TopicPartition]) -> Mapping[TopicPartition, int]:
        async with Admin(config) as admin:
            listed = await admin.list_offsets({tp: LATEST_TIMESTAMP for tp in partitions})
        return {tp: answer.offset for tp, answer in listed.items()
                if isinstance(answer, ListedOffset)}

    return read
