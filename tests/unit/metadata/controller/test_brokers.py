"""Broker registration, heartbeats, unfencing, session fencing, controlled shutdown."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from clients.protocol import ApiKey, ErrorCode, as_message
from clients.protocol.messages.broker_heartbeat import BrokerHeartbeatResponseData
from clients.protocol.messages.broker_registration import BrokerRegistrationResponseData
from metadata.controller.brokers import (
    broker_heartbeat,
    fence_expired_brokers,
    register_broker,
    unregister_broker,
)
from metadata.records import ConfigRecord, FeatureLevelRecord, FenceBrokerRecord, RegisterBrokerRecord
from metadata.settings import ControllerSettings
from tests.unit.metadata.controller.harness import Cluster


def registration(request: dict[str, Any]) -> Any:
    return as_message(ApiKey.BROKER_REGISTRATION, 4, request)


def heartbeat(request: dict[str, Any]) -> Any:
    return as_message(ApiKey.BROKER_HEARTBEAT, 1, request)


def test_new_registration_starts_fenced_with_epoch_from_metadata_offset() -> None:
    c = Cluster()
    c.commit([ConfigRecord(resource_type=4, resource_name="", name="x", value="1")] * 5)
    response = c.register(1)
    assert response == BrokerRegistrationResponseData(error_code=0, broker_epoch=5)
    reg = c.image.broker(1)
    assert reg.fenced and reg.epoch == 5
    assert reg.endpoint("PLAINTEXT").port == 9093
    assert c.tracker.registration_offset(1) == 5


def test_new_incarnation_after_session_expiry_bumps_epoch() -> None:
    c = Cluster()
    c.add_brokers(1)
    old = c.image.broker(1).epoch
    c.now_ms += c.settings.broker_session_timeout_ms
    response = c.register(1, incarnation=uuid.uuid4())
    assert response.error_code == 0 and response.broker_epoch > old
    assert c.image.broker(1).fenced


def test_same_incarnation_retry_gets_a_fresh_epoch_even_against_the_same_image() -> None:
    c = Cluster()
    request = {"broker_id": 1, "cluster_id": "", "incarnation_id": uuid.uuid4(), "listeners": [], "features": []}
    first = register_broker(c.image, registration(request), c.now_ms, c.tracker, c.settings)
    c.commit(first[0])
    second = register_broker(c.image, registration(request), c.now_ms, c.tracker, c.settings)
    assert second[1].error_code == 0
    assert second[1].broker_epoch > first[1].broker_epoch


def test_duplicate_live_broker_id_is_rejected() -> None:
    c = Cluster()
    c.add_brokers(1)
    c.now_ms += c.settings.broker_session_timeout_ms - 1
    response = c.register(1, incarnation=uuid.uuid4())
    assert response == BrokerRegistrationResponseData(
        error_code=ErrorCode.DUPLICATE_BROKER_REGISTRATION, broker_epoch=-1)


def test_restart_naming_its_previous_epoch_registers_within_the_old_session() -> None:
    c = Cluster()
    c.add_brokers(1)
    previous = c.image.broker(1).epoch
    c.now_ms += 1
    request = {"broker_id": 1, "cluster_id": "", "incarnation_id": uuid.uuid4(), "listeners": [],
               "features": [], "previous_broker_epoch": previous}
    records, response = register_broker(c.image, registration(request), c.now_ms, c.tracker, c.settings)
    assert response.error_code == 0 and response.broker_epoch > previous
    wrong = dict(request, incarnation_id=uuid.uuid4(), previous_broker_epoch=previous - 1)
    _, refused = register_broker(c.image, registration(wrong), c.now_ms, c.tracker, c.settings)
    assert refused.error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION


def test_inconsistent_cluster_id_is_rejected() -> None:
    c = Cluster(settings=ControllerSettings(cluster_id="abc"))
    request = {"broker_id": 1, "cluster_id": "other", "incarnation_id": uuid.uuid4(), "listeners": [], "features": []}
    records, response = register_broker(c.image, registration(request), c.now_ms, c.tracker, c.settings)
    assert records == [] and response.error_code == ErrorCode.INCONSISTENT_CLUSTER_ID


def test_unsupported_feature_range_is_rejected() -> None:
    c = Cluster()
    c.commit([FeatureLevelRecord(name="metadata.version", feature_level=20)])
    request = {
        "broker_id": 1, "cluster_id": "", "incarnation_id": uuid.uuid4(), "listeners": [],
        "features": [{"name": "metadata.version", "min_supported_version": 1, "max_supported_version": 10}],
    }
    _, response = register_broker(c.image, registration(request), c.now_ms, c.tracker, c.settings)
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION


def test_heartbeat_unfences_only_once_caught_up_to_registration() -> None:
    c = Cluster()
    c.register(1)
    registered_at = c.tracker.registration_offset(1)
    behind = c.heartbeat(1, offset=registered_at - 1)
    assert behind.is_caught_up is False and behind.is_fenced is True
    assert c.image.broker(1).fenced
    caught_up = c.heartbeat(1, offset=registered_at)
    assert caught_up == BrokerHeartbeatResponseData(
        error_code=0, is_caught_up=True, is_fenced=False, should_shut_down=False)
    assert not c.image.broker(1).fenced


def test_heartbeat_with_stale_epoch_or_unknown_broker() -> None:
    c = Cluster()
    c.add_brokers(1)
    request = {"broker_id": 1, "broker_epoch": c.image.broker(1).epoch - 1, "current_metadata_offset": 0,
               "want_fence": False, "want_shut_down": False}
    records, response = broker_heartbeat(c.image, heartbeat(request), c.now_ms, c.tracker, c.settings)
    assert records == [] and response.error_code == ErrorCode.STALE_BROKER_EPOCH and response.is_fenced
    _, response = broker_heartbeat(c.image, heartbeat({**request, "broker_id": 9}), c.now_ms, c.tracker, c.settings)
    assert response.error_code == ErrorCode.BROKER_ID_NOT_REGISTERED


def test_session_expiry_fences_and_moves_leadership_to_first_live_isr_member() -> None:
    c = Cluster()
    c.add_brokers(1, 2, 3)
    c.create_topic("t", 1, 3, assignments=[{"partition_index": 0, "broker_ids": [1, 2, 3]}], num_partitions=-1, replication_factor=-1)
    tid = c.image.topic("t").topic_id
    c.now_ms += 5000
    c.heartbeat(2)
    c.heartbeat(3)
    assert fence_expired_brokers(c.image, c.tracker, c.now_ms, c.settings) == []
    c.now_ms += 4000  # broker 1 silent for 9000 ms
    records = fence_expired_brokers(c.image, c.tracker, c.now_ms, c.settings)
    assert isinstance(records[-1], FenceBrokerRecord)
    c.commit(records)
    part = c.image.partition(tid, 0)
    assert (part.leader, part.isr, part.leader_epoch) == (2, (2, 3), 1)
    assert c.image.broker(1).fenced


def test_fencing_never_empties_an_isr_and_leaves_no_leader() -> None:
    c = Cluster()
    c.add_brokers(1, 2)
    c.create_topic("t", assignments=[{"partition_index": 0, "broker_ids": [1, 2]}], num_partitions=-1, replication_factor=-1)
    tid = c.image.topic("t").topic_id
    c.now_ms += 9000
    c.heartbeat(2)
    c.commit(fence_expired_brokers(c.image, c.tracker, c.now_ms, c.settings))  # broker 1 fenced
    c.now_ms += 9000
    c.commit(fence_expired_brokers(c.image, c.tracker, c.now_ms, c.settings))  # now broker 2 too
    part = c.image.partition(tid, 0)
    assert part.isr == (2,) and part.leader == -1
    # The last ISR member comes back: it leads again.
    c.heartbeat(2)
    part = c.image.partition(tid, 0)
    assert part.leader == 2 and part.isr == (2,)


def test_fencing_several_expired_brokers_at_once_sees_each_other() -> None:
    c = Cluster()
    c.add_brokers(1, 2, 3)
    c.create_topic("t", assignments=[{"partition_index": 0, "broker_ids": [1, 2, 3]}], num_partitions=-1, replication_factor=-1)
    tid = c.image.topic("t").topic_id
    c.now_ms += 9000
    c.heartbeat(3)
    c.commit(fence_expired_brokers(c.image, c.tracker, c.now_ms, c.settings))
    part = c.image.partition(tid, 0)
    assert part.leader == 3 and part.isr == (3,)


def test_unclean_election_picks_first_live_replica_when_enabled() -> None:
    for enabled, expected_leader in ((False, -1), (True, 2)):
        c = Cluster(settings=ControllerSettings(unclean_leader_election_enable=enabled))
        c.add_brokers(1, 2)
        c.create_topic("t", assignments=[{"partition_index": 0, "broker_ids": [1, 2]}], num_partitions=-1, replication_factor=-1)
        tid = c.image.topic("t").topic_id
        from metadata.records import PartitionChangeRecord

        c.commit([PartitionChangeRecord(partition_id=0, topic_id=tid, isr=(1,))])  # 2 fell out of sync
        c.now_ms += 9000
        c.heartbeat(2)
        c.commit(fence_expired_brokers(c.image, c.tracker, c.now_ms, c.settings))
        part = c.image.partition(tid, 0)
        assert part.leader == expected_leader
        if enabled:
            assert part.isr == (2,) and part.leader_recovery_state == 1
        else:
            # As in Kafka, the ISR never empties: the fenced last member stays in it.
            assert part.isr == (1,) and part.leader_recovery_state == 0


def test_unclean_election_topic_config_overrides_broker_default() -> None:
    c = Cluster()
    c.add_brokers(1, 2)
    c.create_topic(
        "t", assignments=[{"partition_index": 0, "broker_ids": [1, 2]}], num_partitions=-1, replication_factor=-1,
        configs=[{"name": "unclean.leader.election.enable", "value": "true"}],
    )
    c.commit([ConfigRecord(resource_type=4, resource_name="", name="unclean.leader.election.enable", value="false")])
    tid = c.image.topic("t").topic_id
    from metadata.records import PartitionChangeRecord

    c.commit([PartitionChangeRecord(partition_id=0, topic_id=tid, isr=(1,))])
    c.now_ms += 9000
    c.heartbeat(2)
    c.commit(fence_expired_brokers(c.image, c.tracker, c.now_ms, c.settings))
    assert c.image.partition(tid, 0).leader == 2


@pytest.mark.parametrize("resource,node_id,elected", [
    ("", None, True),   # the cluster-wide dynamic default reaches existing topics
    ("1", 1, True),     # the active controller's own dynamic config, as in Kafka
    ("3", 1, False),    # another node's: not the controller's
])
def test_unclean_election_follows_dynamic_broker_configs(resource: str, node_id: int | None,
                                                          elected: bool) -> None:
    c = Cluster(settings=ControllerSettings(node_id=node_id))
    c.add_brokers(1, 2)
    c.create_topic("t", assignments=[{"partition_index": 0, "broker_ids": [1, 2]}],
                   num_partitions=-1, replication_factor=-1)
    tid = c.image.topic("t").topic_id
    from metadata.records import PartitionChangeRecord

    c.commit([PartitionChangeRecord(partition_id=0, topic_id=tid, isr=(1,))])
    c.commit([ConfigRecord(resource_type=4, resource_name=resource,
                           name="unclean.leader.election.enable", value="true")])
    c.now_ms += 9000
    c.heartbeat(2)
    c.commit(fence_expired_brokers(c.image, c.tracker, c.now_ms, c.settings))
    assert c.image.partition(tid, 0).leader == (2 if elected else -1)


def test_want_fence_fences_a_live_broker() -> None:
    c = Cluster()
    c.add_brokers(1)
    response = c.heartbeat(1, want_fence=True)
    assert response.is_fenced is True and c.image.broker(1).fenced


def test_controlled_shutdown_moves_leadership_then_allows_shutdown() -> None:
    c = Cluster()
    c.add_brokers(1, 2, 3)
    c.create_topic("t", assignments=[
        {"partition_index": 0, "broker_ids": [1, 2]},
        {"partition_index": 1, "broker_ids": [2, 1]},
        {"partition_index": 2, "broker_ids": [1, 3]},
    ], num_partitions=-1, replication_factor=-1)
    c.create_topic("solo", assignments=[{"partition_index": 0, "broker_ids": [1]}], num_partitions=-1, replication_factor=-1)
    t = c.image.topic("t").topic_id
    solo = c.image.topic("solo").topic_id
    first = c.heartbeat(1, want_shut_down=True)
    assert first.should_shut_down is False
    assert c.image.broker(1).in_controlled_shutdown
    assert c.image.partition(t, 0).leader == 2 and c.image.partition(t, 0).isr == (2,)
    assert c.image.partition(t, 1).leader == 2 and c.image.partition(t, 1).isr == (2,)
    assert c.image.partition(t, 2).leader == 3 and c.image.partition(t, 2).isr == (3,)
    # Sole ISR member: stays in the ISR, but no longer leads.
    assert c.image.partition(solo, 0).isr == (1,) and c.image.partition(solo, 0).leader == -1
    second = c.heartbeat(1, want_shut_down=True)
    assert second.should_shut_down is True


def test_unregister_broker_moves_duties_and_removes_registration() -> None:
    c = Cluster()
    c.add_brokers(1, 2)
    c.create_topic("t", assignments=[{"partition_index": 0, "broker_ids": [1, 2]}], num_partitions=-1, replication_factor=-1)
    records, code = unregister_broker(c.image, 1, c.settings)
    assert code == 0
    c.commit(records)
    assert c.image.broker(1) is None
    assert c.image.partition(c.image.topic("t").topic_id, 0).leader == 2
    assert unregister_broker(c.image, 1, c.settings)[1] == ErrorCode.BROKER_ID_NOT_REGISTERED


def test_reregistration_of_a_leader_moves_its_leadership_first() -> None:
    c = Cluster()
    c.add_brokers(1, 2)
    c.create_topic("t", assignments=[{"partition_index": 0, "broker_ids": [1, 2]}], num_partitions=-1, replication_factor=-1)
    c.now_ms += 9000
    c.heartbeat(2)
    request = {"broker_id": 1, "cluster_id": "", "incarnation_id": uuid.uuid4(), "listeners": [], "features": []}
    records, response = register_broker(c.image, registration(request), c.now_ms, c.tracker, c.settings)
    assert isinstance(records[-1], RegisterBrokerRecord) and len(records) == 2
    c.commit(records)
    assert c.image.partition(c.image.topic("t").topic_id, 0).leader == 2


def test_tracker_expiry_and_reset_on_controller_activation() -> None:
    from metadata.heartbeats import BrokerHeartbeatTracker

    c = Cluster()
    c.add_brokers(1, 2)
    tracker = BrokerHeartbeatTracker()
    assert tracker.expired(c.now_ms + 10**6, 9000) == []
    tracker.reset(c.image, c.now_ms)
    tracker.touch(2, c.now_ms + 5000)
    assert tracker.expired(c.now_ms + 8999, 9000) == []
    assert tracker.expired(c.now_ms + 9000, 9000) == [1]
    assert tracker.expired(c.now_ms + 14000, 9000) == [1, 2]
    assert tracker.has_valid_session(2, c.now_ms + 13999, 9000)


def test_fenced_broker_asking_to_shut_down_may_do_so_at_once() -> None:
    c = Cluster()
    c.add_brokers(1, 2)
    c.create_topic("t", assignments=[{"partition_index": 0, "broker_ids": [1, 2]}], num_partitions=-1, replication_factor=-1)
    c.heartbeat(1, want_fence=True)
    response = c.heartbeat(1, want_shut_down=True)
    assert response.should_shut_down is True and response.is_fenced is True
