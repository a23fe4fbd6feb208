"""DescribeQuorum (and DescribeCluster on the CONTROLLER listener) from the quorum's status.

Offsets are the metadata log's Raft indexes: `high_watermark` is the commit index,
`log_end_offset` the last index a replica holds. Timestamps are wall-clock milliseconds, -1
when unknown.

Kafka answers DescribeQuorum only on the leader (NOT_LEADER_OR_FOLLOWER elsewhere). Raftka's
voters also answer when they know the leader, with the leader's id and epoch and what they
know themselves (other replicas' offsets as -1), so a client can find the leader from any
voter; a voter without a known leader answers NOT_LEADER_OR_FOLLOWER as Kafka does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from clients.protocol import ErrorCode, ZERO_UUID
from clients.protocol.messages.describe_cluster import (
    DescribeClusterRequestData,
    DescribeClusterResponseData,
)
from clients.protocol.messages.describe_quorum import (
    DescribeQuorumRequestData,
    DescribeQuorumResponseData,
)
from kraft.status import QuorumStatus, ReplicaStatus
from metadata.topic_names import METADATA_PARTITION, METADATA_TOPIC


# DescribeCluster endpoint_type values (Kafka's EndpointType).
ENDPOINT_TYPE_BROKERS = 1
ENDPOINT_TYPE_CONTROLLERS = 2

Quorum = DescribeQuorumResponseData


@dataclass(frozen=True)
class ControllerEndpoint:
    """Where a voter serves controller RPCs (its CONTROLLER listener)."""

    listener_name: str
    host: str
    port: int


class CaughtUpTimes:
    """Last wall-clock time each replica was seen fully caught up with the leader.

    The quorum status only gives the current lag, so the controller samples it (`observe`)
    on every status poll; sampling resets when this node stops leading.
    """

    def __init__(self) -> None:
        self._caught_up_ms: dict[int, int] = {}

    def observe(self, status: QuorumStatus, now_ms: int) -> None:
        if not status.is_leader:
            self._caught_up_ms.clear()
            return
        for replica in (*status.voters, *status.observers):
            if replica.node_id is not None and replica.lag == 0:
                self._caught_up_ms[replica.node_id] = _fetch_time(replica, now_ms)

    def get(self, node_id: int) -> int:
        return self._caught_up_ms.get(node_id, -1)


def names_metadata_partition(body: DescribeQuorumRequestData) -> bool:
    """True when the request asks about exactly `__cluster_metadata` partition 0."""
    if len(body.topics) != 1 or body.topics[0].topic_name != METADATA_TOPIC:
        return False
    partitions = body.topics[0].partitions
    return len(partitions) == 1 and partitions[0].partition_index == METADATA_PARTITION


def describe_quorum_response(body: DescribeQuorumRequestData, version: int,
                             status: QuorumStatus, now_ms: int, caught_up: CaughtUpTimes,
                             endpoints: Mapping[int, ControllerEndpoint]
                             ) -> DescribeQuorumResponseData:
    """The DescribeQuorumResponse body of `version` for this node's view."""
    if not names_metadata_partition(body):
        # Kafka treats any other topic partition as an invalid request (a single Raft log).
        return DescribeQuorumResponseData(error_code=ErrorCode.INVALID_REQUEST,
                                          error_message=None)
    if status.leader_id is None:
        code = ErrorCode.NOT_LEADER_OR_FOLLOWER
        partition = Quorum.PartitionData(
            partition_index=METADATA_PARTITION, error_code=code, error_message=code.message,
            leader_id=-1, leader_epoch=status.epoch, high_watermark=-1)
    else:
        partition = Quorum.PartitionData(
            partition_index=METADATA_PARTITION, error_code=ErrorCode.NONE, error_message=None,
            leader_id=status.leader_id, leader_epoch=status.epoch,
            high_watermark=status.high_watermark,
            current_voters=[_replica_state(r, status, now_ms, caught_up)
                            for r in status.voters if r.node_id is not None],
            # By node id: the Raft layer knows observers by connection, in no useful order.
            observers=[_replica_state(r, status, now_ms, caught_up)
                       for r in sorted(status.observers, key=lambda r: r.node_id or -1)
                       if r.node_id is not None])
    response = DescribeQuorumResponseData(
        error_code=ErrorCode.NONE, error_message=None,
        topics=[Quorum.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])])
    if version >= 2:
        # Only v2 has `nodes`, and it is not ignorable: older versions must not carry it.
        response.nodes = [
            Quorum.Node(node_id=node_id, listeners=[
                Quorum.Listener(name=ep.listener_name, host=ep.host, port=ep.port)])
            for node_id, ep in sorted(endpoints.items())]
    return response


def _replica_state(replica: ReplicaStatus, status: QuorumStatus, now_ms: int,
                   caught_up: CaughtUpTimes) -> Quorum.ReplicaState:
    assert replica.node_id is not None
    if replica.node_id == status.node_id and status.is_leader:
        fetch_ms = caught_up_ms = now_ms
    else:
        fetch_ms = _fetch_time(replica, now_ms)
        caught_up_ms = caught_up.get(replica.node_id) if status.is_leader else -1
    return Quorum.ReplicaState(
        replica_id=replica.node_id, replica_directory_id=ZERO_UUID,
        log_end_offset=-1 if replica.log_end_offset is None else replica.log_end_offset,
        last_fetch_timestamp=fetch_ms, last_caught_up_timestamp=caught_up_ms)


def _fetch_time(replica: ReplicaStatus, now_ms: int) -> int:
    return -1 if replica.last_contact_ms is None else now_ms - replica.last_contact_ms


def describe_cluster_response(body: DescribeClusterRequestData, version: int, *,
                              cluster_id: str, leader_id: int | None,
                              endpoints: Mapping[int, ControllerEndpoint]
                              ) -> DescribeClusterResponseData:
    """DescribeCluster as a Kafka controller answers it: only for endpoint_type CONTROLLERS
    (v1+), listing the voters' controller endpoints and the active controller."""
    requested = body.endpoint_type if version >= 1 else None
    if requested != ENDPOINT_TYPE_CONTROLLERS:
        if version == 0:
            code = ErrorCode.INVALID_REQUEST
        elif requested == ENDPOINT_TYPE_BROKERS:
            code = ErrorCode.MISMATCHED_ENDPOINT_TYPE
        else:
            code = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
        return DescribeClusterResponseData(error_code=code, error_message=code.message,
                                           cluster_id=cluster_id)
    Broker = DescribeClusterResponseData.DescribeClusterBroker
    return DescribeClusterResponseData(
        error_code=ErrorCode.NONE,
        endpoint_type=ENDPOINT_TYPE_CONTROLLERS,
        cluster_id=cluster_id,
        controller_id=-1 if leader_id is None else leader_id,
        brokers=[Broker(broker_id=node_id, host=ep.host, port=ep.port)
                 for node_id, ep in sorted(endpoints.items())],
    )
