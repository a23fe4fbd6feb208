"""A partition leader frozen (SIGSTOP) past broker.session.timeout.ms, then resumed: it is
fenced while away, and once back the requests it finds waiting get no acknowledgement and
no data for an epoch it lost."""

from __future__ import annotations


import pytest

from cluster.testing.waiting import wait_for
from clients.protocol import ApiKey
from clients.protocol.errors import ErrorCode
from tests.integration.fault_support import (
    QueuedRequest,
    cluster_view,
    log_values,
    node_hosts,
    produce_acknowledged,
)
from tests.unit.broker.apis.batches import (batch, fetch_body, only_partition, produce_body,
    values_of)

pytestmark = pytest.mark.slow

FAST = {"broker_session_timeout_ms": 3000, "broker_heartbeat_interval_ms": 500}
TOPIC = "paused-leader"
REFUSED_BY_EPOCH = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_LEADER_EPOCH,
                    ErrorCode.FENCED_LEADER_EPOCH}


def test_paused_leader_is_fenced_and_its_stale_answers_are_refused(raftka_cluster) -> None:
    cluster = raftka_cluster(3, hosts=node_hosts(3), **FAST)
    cluster.create_topic(TOPIC, 1, 3, {"min.insync.replicas": "2"})
    addr = {n: (cluster.host(n), cluster.info.node(n).client_port) for n in cluster.node_ids}
    before = wait_for(lambda: cluster_view(*addr[1], TOPIC), "metadata", 10)
    old = before["leader"]
    witness = next(n for n in cluster.node_ids if n != old)
    acknowledged = [b"before-%d" % i for i in range(3)]
    for value in acknowledged:
        assert produce_acknowledged(*addr[old], TOPIC, value)["error_code"] == ErrorCode.NONE

    cluster.pause(old)
    try:
        # Written while it is frozen: it reads this only after it resumes.
        stale_produce = QueuedRequest(*addr[old], ApiKey.PRODUCE, 9, produce_body(
            TOPIC, batch([b"queued-while-paused"]), acks=-1, timeout_ms=5000))
        after = wait_for(
            lambda: (v := cluster_view(*addr[witness], TOPIC)) and v["leader"] != old
            and old not in v["brokers"] and old not in v["isr"] and v,
            "the paused leader to be fenced and replaced", 30)
        assert after["epoch"] > before["epoch"]
        new = after["leader"]
        for i in range(3):
            value = b"while-paused-%d" % i
            assert produce_acknowledged(*addr[new], TOPIC, value)["error_code"] == \
                ErrorCode.NONE
            acknowledged.append(value)
        # A reader that knows the new epoch asks the old leader, also before it resumes.
        new_epoch_fetch = QueuedRequest(*addr[old], ApiKey.FETCH, 12, fetch_body(
            TOPIC, 0, current_leader_epoch=after["epoch"]))
    finally:
        cluster.resume(old)

    produced = stale_produce.answer()
    assert produced is not None
    # Appended by the stale leader before it learned the new epoch, maybe, but never
    # acknowledged: no follower of the old epoch fetches it.
    assert only_partition(produced)["error_code"] != ErrorCode.NONE, produced
    fetched = new_epoch_fetch.answer()
    assert fetched is not None
    part = only_partition(fetched, "responses", "partitions")
    assert part["error_code"] in REFUSED_BY_EPOCH, part
    assert not values_of(part["records"] or b"")

    # Back in the ISR, with exactly what was acknowledged, in order.
    wait_for(lambda: (v := cluster_view(*addr[new], TOPIC)) and len(v["isr"]) == 3,
             "the resumed broker to rejoin the ISR", 30)
    final = log_values(cluster.info.node(new).dir / "data", TOPIC)
    assert final == acknowledged
    wait_for(lambda: log_values(cluster.info.node(old).dir / "data", TOPIC) == final,
             "the resumed broker's log to equal the leader's", 10)
