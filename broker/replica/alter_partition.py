"""Sends partition leaders' ISR proposals to the controller as AlterPartition (v3).

Kafka's AlterPartitionManager: proposals queue per partition, one request is in flight at a
time carrying every queued proposal, and each answer goes back to its Partition, which
applies the committed ISR or says whether to retry.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable

import trio

from broker.replica.partition import Partition
from clients.protocol import ApiKey, ErrorCode
from metadata.image import MetadataImage

logger = logging.getLogger(__name__)

DEFAULT_REQUEST_TIMEOUT_MS = 30_000
DEFAULT_RETRY_BACKOFF_MS = 100


@dataclass(slots=True)
class _Proposal:
    partition: Partition
    entry: dict[str, Any]
    leader_epoch: int
    partition_epoch: int


class AlterPartitionManager:
    """Queues ISR proposals and sends them through `channel` (a ControllerClient).

    `on_change(partition)` runs (on the trio thread) after an answer was applied, so
    waiters on the partition can re-check its ISR and high watermark.
    """

    def __init__(self, broker_id: int, channel: Any, broker_epoch: Callable[[], int],
                 image: Callable[[], MetadataImage], on_change: Callable[[Partition], None],
                 *, request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
                 retry_backoff_ms: int = DEFAULT_RETRY_BACKOFF_MS) -> None:
        self._broker_id = broker_id
        self._channel = channel
        self._broker_epoch = broker_epoch
        self._image = image
        self._on_change = on_change
        self._request_timeout_ms = request_timeout_ms
        self._backoff_s = retry_backoff_ms / 1000
        self._unsent: dict[tuple[str, int], _Proposal] = {}
        self._wake = trio.Event()
        self.requests_sent = 0

    def submit(self, partition: Partition, new_isr: tuple[int, ...]) -> bool:
        """Propose `new_isr` for `partition` unless a proposal of it is already pending."""
        if partition.pending_isr is not None or not partition.is_leader:
            return False
        image = self._image()
        epochs = {b: reg.epoch for b in new_isr if (reg := image.broker(b)) is not None}
        entry = partition.alter_partition_item(new_isr, epochs)
        self._unsent[partition.key] = _Proposal(partition, entry, partition.leader_epoch,
                                                partition.partition_epoch)
        logger.info("%s-%d: proposing ISR %s (now %s)", partition.topic, partition.partition_id,
                    list(new_isr), list(partition.isr))
        self._wake.set()
        return True

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Send queued proposals until cancelled."""
        task_status.started()
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            batch, self._unsent = self._unsent, {}
            if not batch:
                continue
            retry = await self._send(list(batch.values()))
            for proposal in retry:
                self._unsent.setdefault(proposal.partition.key, proposal)
            if self._unsent:
                await trio.sleep(self._backoff_s)
                self._wake.set()

    async def _send(self, proposals: list[_Proposal]) -> list[_Proposal]:
        """One AlterPartition for `proposals`; returns those to send again."""
        topics: dict[Any, list[dict[str, Any]]] = {}
        for proposal in proposals:
            topics.setdefault(proposal.partition.topic_id, []).append(proposal.entry)
        body = {"broker_id": self._broker_id, "broker_epoch": self._broker_epoch(),
                "topics": [{"topic_id": tid, "partitions": parts} for tid, parts in topics.items()]}
        self.requests_sent += 1
        try:
            response = await self._channel.send(ApiKey.ALTER_PARTITION, body,
                                                 self._request_timeout_ms)
        except Exception as exc:  # the channel gave up finding a controller: retry later
            logger.warning("AlterPartition failed: %s", exc)
            response = None
        results: dict[tuple[Any, int], dict[str, Any]] = {}
        if response is not None and response.get("error_code", 0) == ErrorCode.NONE:
            for topic in response.get("topics") or ():
                for result in topic.get("partitions") or ():
                    results[(topic.get("topic_id"), result["partition_index"])] = result
        elif response is not None:
            logger.warning("AlterPartition answered %s", _name(response["error_code"]))
        retry = []
        for proposal in proposals:
            partition = proposal.partition
            result = results.get((partition.topic_id, partition.partition_id))
            if partition.on_alter_partition_result(proposal.leader_epoch,
                                                   proposal.partition_epoch, result):
                retry.append(proposal)
            self._on_change(partition)
        return retry


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)

