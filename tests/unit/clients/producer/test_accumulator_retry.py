"""A retried batch waits out its backoff while the leader stays, not once it has moved."""

from __future__ import annotations

import uuid

from clients.common.cluster import BrokerNode, ClusterMetadata, PartitionInfo, TopicInfo
from clients.producer.accumulator import RecordAccumulator
from clients.producer.future import DeliveryFuture


def _cluster(leader: int) -> ClusterMetadata:
    return ClusterMetadata(
        brokers={n: BrokerNode(n, "127.0.0.1", 9090 + n) for n in (1, 2)},
        topics={"t": TopicInfo("t", uuid.UUID(int=1), 0, False,
                               {0: PartitionInfo("t", 0, leader, 0, (1, 2), (1, 2))})})


def test_the_backoff_holds_for_the_same_leader_and_is_skipped_for_a_new_one() -> None:
    acc = RecordAccumulator(batch_size=1000, linger_ms=0, compression=0,
                            guarantee_order=True)
    acc.append("t", 0, 0, None, b"v", (), DeliveryFuture(), 0.0)
    [batch] = acc.drain(_cluster(1), 1, 1 << 20, 0.0, flushing=False)
    acc.retry_later(batch, 800.0)          # NOT_LEADER_OR_FOLLOWER from broker 1

    nodes, wait, _ = acc.ready(_cluster(1), 100.0, flushing=False)
    assert nodes == set() and wait == 700.0
    assert acc.drain(_cluster(1), 1, 1 << 20, 100.0, flushing=False) == []

    nodes, _, _ = acc.ready(_cluster(2), 100.0, flushing=False)
    assert nodes == {2}
    assert acc.drain(_cluster(2), 2, 1 << 20, 100.0, flushing=False) == [batch]
    assert batch.attempts == 2 and batch.sent_to == 2
