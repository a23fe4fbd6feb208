"""Where each partition is fetched from when the leader names a closer replica (KIP-392).

A leader that knows the consumer's `client.rack` may answer a fetch with a
`preferred_read_replica` instead of records. The consumer then fetches that partition from
that replica until it answers an error or the connection fails (then the leader again), or
until `metadata.max.age.ms` has passed, when the leader is asked again (Kafka's Fetcher).
"""

from __future__ import annotations

from typing import Callable, Container

from clients.clock import monotonic_ms
from clients.consumer.group.protocol import TopicPartition

NO_PREFERRED_REPLICA = -1


class ReadReplicas:
    """The preferred read replica of each partition, with the time it expires."""

    def __init__(self, ttl_ms: int, clock: Callable[[], float] = monotonic_ms) -> None:
        self._ttl_ms = ttl_ms
        self._clock = clock
        self._preferred: dict[TopicPartition, tuple[int, float]] = {}

    def node_for(self, tp: TopicPartition, leader_id: int, online: Container[int]) -> int:
        """The broker to fetch `tp` from: its preferred replica while that is unexpired and in
        the cluster metadata (`online`), else the leader."""
        entry = self._preferred.get(tp)
        if entry is None:
            return leader_id
        node_id, expires_ms = entry
        if self._clock() >= expires_ms or node_id not in online:
            del self._preferred[tp]
            return leader_id
        return node_id

    def preferred(self, tp: TopicPartition) -> int:
        """The current preferred replica of `tp` (expired or not), or NO_PREFERRED_REPLICA."""
        entry = self._preferred.get(tp)
        return NO_PREFERRED_REPLICA if entry is None else entry[0]

    def update(self, tp: TopicPartition, node_id: int) -> None:
        """The leader named `node_id`: fetch `tp` there for the next `ttl_ms`."""
        if node_id >= 0:
            self._preferred[tp] = (node_id, self._clock() + self._ttl_ms)

    def clear(self, tp: TopicPartition) -> bool:
        """Back to the leader for `tp`; whether a preferred replica was set."""
        return self._preferred.pop(tp, None) is not None

    def clear_node(self, node_id: int) -> None:
        """Back to the leaders for every partition read from `node_id` (it failed)."""
        for tp in [tp for tp, (node, _) in self._preferred.items() if node == node_id]:
            del self._preferred[tp]
