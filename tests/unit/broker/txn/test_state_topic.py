"""`__transaction_state` is created as Kafka creates it, and refused with too few brokers
the way `__consumer_offsets` is."""

from __future__ import annotations

import pytest

from broker.config import ServerConfig
from broker.coordinator import topic as internal_topic
from broker.coordinator.topic import InternalTopicCreator
from broker.txn.state_topic import transaction_state_topic_settings
from metadata.image import MetadataImage


async def never_called(topic: dict) -> tuple[int, str | None]:
    raise AssertionError("no creation with too few brokers")


def config(**extra: str) -> ServerConfig:
    return ServerConfig({"process.roles": "broker", "node.id": "1",
                         "controller.quorum.voters": "9@127.0.0.1:1",
                         "listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": "/nonexistent",
                         "transaction.state.log.num.partitions": "7",
                         "transaction.state.log.replication.factor": "2",
                         "transaction.state.log.min.isr": "2", **extra})


def test_the_topic_request_carries_the_transaction_log_settings():
    request = transaction_state_topic_settings(config()).create_request()
    assert (request["name"], request["num_partitions"], request["replication_factor"]) == (
        "__transaction_state", 7, 2)
    configs = {c["name"]: c["value"] for c in request["configs"]}
    assert configs["cleanup.policy"] == "compact"
    assert configs["min.insync.replicas"] == "2"
    assert configs["unclean.leader.election.enable"] == "false"


def test_too_few_brokers_names_the_transaction_log_key(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(internal_topic, "usable_brokers", lambda image: [1])
    settings = transaction_state_topic_settings(
        config(**{"transaction.state.log.replication.factor": "3"}))
    creator = InternalTopicCreator(settings, never_called)
    reason = creator.ensure(MetadataImage.empty(), nursery=object())  # type: ignore[arg-type]
    assert reason == ("__transaction_state cannot be created: 1 live broker(s), "
                      "transaction.state.log.replication.factor is 3")
