"""The broker's data APIs: Produce, Fetch, ListOffsets, OffsetForLeaderEpoch,
DeleteRecords, DescribeConfigs, InitProducerId, and the group APIs' interim answers."""

from broker.dataplane.component import DataPlane, data_plane_component

__all__ = ["DataPlane", "data_plane_component"]
