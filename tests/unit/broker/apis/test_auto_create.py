"""Metadata-driven topic auto-creation through a controller endpoint."""

from __future__ import annotations

import random

import trio

from broker.config.endpoints import Listener
from broker.controller_client import ControllerClient
from broker.apis.api_versions import install_api_versions
from broker.apis.request import RequestRouter
from broker.network import NetworkServer
from clients.protocol import ApiKey, ErrorCode
from clients.protocol.messages.create_topics import CreateTopicsRequestData
from metadata.controller.topics import create_topics
from metadata.settings import ControllerSettings
from tests.unit.broker.apis.harness import Broker, running_broker

CreatableTopicConfig = CreateTopicsRequestData.CreatableTopicConfig


class _TopicController:
    """CreateTopics from the controller's decision; its records go to the broker's image."""

    def __init__(self, publish: bool = True) -> None:
        self.broker: Broker | None = None
        self.requests: list[CreateTopicsRequestData] = []
        self.created = trio.Event()
        self.publish = publish

    async def handle(self, request, ctx):  # type: ignore[no-untyped-def]
        assert self.broker is not None
        self.requests.append(request.body)
        records, response = create_topics(self.broker.image, request.body, 0,
                                          rng=random.Random(1), settings=ControllerSettings())
        if self.publish:
            self.broker.publish(records)
        self.created.set()
        return response


async def test_metadata_for_a_missing_topic_creates_it(tmp_path):
    controller = _TopicController()
    router = RequestRouter()
    install_api_versions(router)
    router.register(ApiKey.CREATE_TOPICS, controller.handle)
    server = NetworkServer([Listener("CONTROLLER", "127.0.0.1", 0, "PLAINTEXT")], router)
    async with trio.open_nursery() as nursery:
        host, port = (await nursery.start(server.serve))["CONTROLLER"]
        channel = ControllerClient({9: (host, port)}, "test-broker")
        async with running_broker(tmp_path, channel=channel,
                                  extra={"num.partitions": "3"}) as broker:
            controller.broker = broker
            conn = await broker.connect()
            body = {"topics": [{"name": "fresh"}], "allow_auto_topic_creation": True}
            first = await conn.request(ApiKey.METADATA, body, 9)
            assert first["topics"][0]["error_code"] == ErrorCode.LEADER_NOT_AVAILABLE
            with trio.fail_after(10):
                await controller.created.wait()
            assert controller.requests[0].topics[0].num_partitions == 3
            second = await conn.request(ApiKey.METADATA, body, 9)
            assert second["topics"][0]["error_code"] == 0
            assert len(second["topics"][0]["partitions"]) == 3
            assert broker.server.replica_manager.leader_partition("fresh", 2).is_leader
            no_create = await conn.request(ApiKey.METADATA, {"topics": [{"name": "other"}],
                                                             "allow_auto_topic_creation": False}, 9)
            assert no_create["topics"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            await conn.aclose()
        await channel.aclose()
        server.stop()


async def test_auto_create_disabled_leaves_topics_unknown(tmp_path):
    async with running_broker(tmp_path, extra={"auto.create.topics.enable": "false"}) as broker:
        assert await broker.server.auto_creator.ensure_topics(["x"]) == {}


async def test_offsets_topic_is_never_auto_created_under_replicated(tmp_path):
    """One live broker, offsets.topic.replication.factor 3: the controller is asked for RF 3
    (and refuses it), so `__consumer_offsets` never exists with fewer replicas."""
    controller = _TopicController()
    router = RequestRouter()
    install_api_versions(router)
    router.register(ApiKey.CREATE_TOPICS, controller.handle)
    server = NetworkServer([Listener("CONTROLLER", "127.0.0.1", 0, "PLAINTEXT")], router)
    async with trio.open_nursery() as nursery:
        host, port = (await nursery.start(server.serve))["CONTROLLER"]
        channel = ControllerClient({9: (host, port)}, "test-broker")
        async with running_broker(tmp_path, channel=channel,
                                  extra={"offsets.topic.replication.factor": "3",
                                         "offsets.topic.num.partitions": "5"}) as broker:
            controller.broker = broker
            conn = await broker.connect()
            body = {"topics": [{"name": "__consumer_offsets"}], "allow_auto_topic_creation": True}
            first = await conn.request(ApiKey.METADATA, body, 9)
            assert first["topics"][0]["error_code"] == ErrorCode.LEADER_NOT_AVAILABLE
            with trio.fail_after(10):
                await controller.created.wait()
            (topic,) = controller.requests[0].topics
            assert (topic.replication_factor, topic.num_partitions) == (3, 5)
            assert CreatableTopicConfig(name="cleanup.policy", value="compact") in topic.configs
            again = await conn.request(ApiKey.METADATA, body, 9)
            assert again["topics"][0]["error_code"] != ErrorCode.NONE
            assert broker.image.topic("__consumer_offsets") is None
        nursery.cancel_scope.cancel()


async def test_missing_topics_of_one_request_go_as_one_bounded_create_topics(tmp_path):
    """Every missing topic of a Metadata request goes in one CreateTopics; a batch the
    controller would refuse as a whole (12,000 partitions here) is not sent, and its topics
    stay UNKNOWN_TOPIC_OR_PARTITION."""
    controller = _TopicController(publish=False)  # decides; the broker creates no logs
    router = RequestRouter()
    install_api_versions(router)
    router.register(ApiKey.CREATE_TOPICS, controller.handle)
    server = NetworkServer([Listener("CONTROLLER", "127.0.0.1", 0, "PLAINTEXT")], router)
    async with trio.open_nursery() as nursery:
        host, port = (await nursery.start(server.serve))["CONTROLLER"]
        channel = ControllerClient({9: (host, port)}, "test-broker")
        async with running_broker(tmp_path, channel=channel,
                                  extra={"num.partitions": "2000"}) as broker:
            controller.broker = broker
            conn = await broker.connect()
            too_many = {"topics": [{"name": f"many{i}"} for i in range(6)],
                        "allow_auto_topic_creation": True}
            refused = await conn.request(ApiKey.METADATA, too_many, 9)
            assert {t["error_code"] for t in refused["topics"]} == {
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
            three = {"topics": [{"name": f"few{i}"} for i in range(3)],
                     "allow_auto_topic_creation": True}
            first = await conn.request(ApiKey.METADATA, three, 9)
            assert {t["error_code"] for t in first["topics"]} == {ErrorCode.LEADER_NOT_AVAILABLE}
            with trio.fail_after(10):
                await controller.created.wait()
            assert [[t.name for t in r.topics] for r in controller.requests] == [
                ["few0", "few1", "few2"]]
            await conn.aclose()
        await channel.aclose()
        nursery.cancel_scope.cancel()
