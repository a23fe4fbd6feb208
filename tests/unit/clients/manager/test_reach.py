"""Every page answers within its time, whatever the cluster does: a read that fails or
does not answer in time leaves the panel empty and names the part that could not be
reached in the page's banner (a fake admin client that never answers, on trio's virtual
clock)."""

from __future__ import annotations

import socket
import uuid
from typing import Any, Iterable

import pytest
import trio

from clients.admin import BrokerNode, ClusterDescription, TopicDescription
from clients.admin.group_operations import QuorumInfo, ReplicaState
from clients.admin.operations import PartitionInfo
from clients.admin import AdminConfig
from clients.manager.broker_probe import probe_brokers
from clients.manager.gather import ClusterReader
from clients.manager.reach import PageReads, Part, bounded_config, detail, silent_broker_line
from clients.net import KafkaConnectionError
from clients.protocol import ErrorCode, KafkaError

BOOTSTRAP = "127.0.0.1:9"
PAGE_S = 5.0
BROKERS = [BrokerNode(1, "h1", 9092), BrokerNode(2, "h2", 9093), BrokerNode(3, "h3", 9094)]


async def _never() -> None:
    await trio.sleep_forever()


async def _answer() -> str:
    await trio.sleep(0.5)
    return "answer"


async def test_a_silent_read_ends_at_the_deadline_and_the_others_still_answer(
        autojump_clock: trio.testing.MockClock) -> None:
    reads = PageReads(PAGE_S, BOOTSTRAP)
    results = await reads.each([(Part("the topics"), _answer),
                                (Part("the metadata quorum"), _never),
                                (Part("broker 2", BROKERS[1]), _never)])
    assert trio.current_time() == pytest.approx(PAGE_S)
    assert results == ["answer", None, None]
    assert reads.problems == [
        f"no answer from the cluster at {BOOTSTRAP} within 5 s: the metadata quorum "
        f"unavailable",
        "broker 2 (h2:9093) did not answer within 5 s"]
    assert not reads.reached_nothing
    # Past the deadline a read is not even started.
    assert await reads.one(Part("the groups"), _answer) is None
    assert "the groups not read: the page's 5 s were spent" in reads.problems


async def test_an_unreachable_cluster_is_one_banner_line_with_its_cause() -> None:
    async def refused() -> None:
        raise KafkaConnectionError(
            "no broker is reachable: cannot connect to 127.0.0.1:9: refused (still failing "
            "after 7 tries, when the timeout expired)")

    reads = PageReads(PAGE_S, BOOTSTRAP)
    assert await reads.each([(Part("the brokers"), refused),
                             (Part("the topics"), refused)]) == [None, None]
    assert reads.problems == [f"no broker reachable at {BOOTSTRAP}: cannot connect to "
                              f"127.0.0.1:9: refused"]
    assert reads.reached_nothing


async def test_a_broker_error_is_the_pages_answer_only_where_the_page_asks_for_it() -> None:
    async def unknown() -> None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "no-such-topic")

    reads = PageReads(PAGE_S, BOOTSTRAP)
    with pytest.raises(KafkaError, match="no-such-topic"):
        await reads.each([(Part("the topic", answers=True), unknown),
                          (Part("the configs"), unknown)])
    assert reads.problems == [f"the configs unavailable: {KafkaError(3, 'no-such-topic')}"]


def test_client_timeouts_are_cut_to_their_share_of_the_page() -> None:
    config = bounded_config({"bootstrap.servers": BOOTSTRAP, "default.api.timeout.ms": "60000",
                             "request.timeout.ms": "500"}, PAGE_S)
    assert config["request.timeout.ms"] == 500  # already shorter: kept
    assert config["socket.connection.setup.timeout.ms"] == 2000
    assert config["default.api.timeout.ms"] == 4000


def test_details_drop_what_the_banner_says() -> None:
    assert detail(KafkaConnectionError("no broker is reachable: x timed out (still failing "
                                       "after 2 tries, when the timeout expired)")) == \
        "x timed out"
    assert detail(TimeoutError()) == "TimeoutError"


class HalfAnsweringAdmin:
    """A cluster whose metadata quorum never answers."""

    async def describe_cluster(self) -> ClusterDescription:
        return ClusterDescription("c", 1, BROKERS)

    async def describe_topics(self, names: Iterable[str] | None = None
                              ) -> list[TopicDescription]:
        return [TopicDescription("t", uuid.uuid4(), False, [
            PartitionInfo("t", 0, 1, 0, (1, 2, 3), (1, 2, 3))])]

    async def describe_quorum(self) -> QuorumInfo:
        await trio.sleep_forever()
        return QuorumInfo(1, 1, 0, (ReplicaState(1, 0, -1),), ())


class SilentBroker2:
    """Probes in which broker 2 never answers; records which brokers each probe asked."""

    def __init__(self) -> None:
        self.asked: list[list[int]] = []

    async def __call__(self, brokers: Iterable[BrokerNode], deadline: float
                       ) -> dict[int, str]:
        asked = sorted(b.node_id for b in brokers)
        self.asked.append(asked)
        if 2 not in asked:
            return {}
        started = trio.current_time()
        await trio.sleep_until(deadline)
        return {2: silent_broker_line(BROKERS[1], trio.current_time() - started)}


def _reader(admin: Any) -> tuple[ClusterReader, SilentBroker2]:
    reader = ClusterReader({"bootstrap.servers": BOOTSTRAP}, PAGE_S)
    reader.admin = admin
    probes = SilentBroker2()
    reader.probe_brokers = probes  # type: ignore[assignment]
    return reader, probes


async def test_the_cluster_page_names_a_silent_broker_and_renders_the_rest(
        autojump_clock: trio.testing.MockClock) -> None:
    reader, probes = _reader(HalfAnsweringAdmin())
    for load in range(2):
        reads = reader.page_reads()
        page = await reader.cluster(reads)
        assert trio.current_time() == pytest.approx(PAGE_S * (load + 1))
        assert page.brokers is not None and [b.node_id for b in page.brokers] == [1, 2, 3]
        assert (page.under_replicated, page.offline, page.quorum) == (0, 0, None)
        assert page.controller_id == 1  # DescribeCluster's, without the quorum's leader
        assert reads.problems == [
            f"no answer from the cluster at {BOOTSTRAP} within 5 s: the metadata quorum "
            f"unavailable",
            "broker 2 (h2:9093) did not answer within 5 s"]
    # Each load probes every broker once: the first those DescribeCluster lists, the next
    # those the first saw (at once, alongside DescribeCluster).
    assert sorted(probes.asked[:2]) == sorted(probes.asked[2:]) == [[], [1, 2, 3]]


async def test_a_broker_gone_from_the_live_brokers_is_named() -> None:
    class OneGone(HalfAnsweringAdmin):
        async def describe_cluster(self) -> ClusterDescription:
            return ClusterDescription("c", 1, [BROKERS[0], BROKERS[2]])

        async def describe_quorum(self) -> QuorumInfo:
            return QuorumInfo(1, 1, 0, (ReplicaState(1, 0, -1),), ())

    reader, _ = _reader(OneGone())
    reads = reader.page_reads()
    page = await reader.cluster(reads)
    assert page.offline == 0 and page.brokers is not None and page.brokers[1].fenced
    assert reads.problems == ["broker 2 is not live (fenced or stopped): 1 replicas on it "
                              "are out of reach"]


async def test_a_probe_names_a_silent_broker_and_one_that_refuses_connections() -> None:
    config = AdminConfig.from_mapping({"bootstrap.servers": BOOTSTRAP,
                                       "socket.connection.setup.timeout.ms": 300})
    with socket.socket() as silent, socket.socket() as closed:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # connections complete in the backlog; nothing ever answers
        closed.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        brokers = [BrokerNode(1, "127.0.0.1", silent.getsockname()[1]),
                   BrokerNode(2, "127.0.0.1", closed.getsockname()[1])]
        with trio.fail_after(10):
            failures = await probe_brokers(config, brokers, trio.current_time() + 5)
    assert failures[1] == f"broker 1 (127.0.0.1:{brokers[0].port}) did not answer within 0.3 s"
    assert failures[2].startswith(f"broker 2 (127.0.0.1:{brokers[1].port}) unreachable: ")
