"""The consumer group coordinator: Kafka's classic group protocol, offsets in
`__consumer_offsets`.

Pure parts: `routing` (which partition owns a group), `records` (the topic's keys and
values), `model`/`membership`/`rebalance`/`responses`/`offsets`/`engine` (group state and
the protocol: requests in `membership`, rebalance phases and deadlines in `rebalance`,
JoinGroup/SyncGroup bodies in `responses`). Runtime:
`coordinator` (loading, writes, parked requests, timers) over the shared coordinator runtime
(`broker.coordinator`: the log, the ordered writer, ownership and loading).
"""

from broker.group.routing import CONSUMER_OFFSETS_TOPIC, partition_for_group

__all__ = ["CONSUMER_OFFSETS_TOPIC", "partition_for_group"]
