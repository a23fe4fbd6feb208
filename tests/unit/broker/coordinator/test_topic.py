"""Internal topic creation (`__consumer_offsets` here): too few brokers is said once, not on
every FindCoordinator."""

from __future__ import annotations

import logging

import pytest

from broker.coordinator import topic as internal_topic
from broker.coordinator.topic import InternalTopicCreator, InternalTopicSettings
from metadata.image import MetadataImage


OFFSETS_TOPIC = InternalTopicSettings(
    "__consumer_offsets", 50, 3, (("cleanup.policy", "compact"),),
    replication_factor_key="offsets.topic.replication.factor",
    users="consumer groups get no coordinator")


async def never_called(topic: dict) -> tuple[int, str | None]:
    raise AssertionError("no creation with too few brokers")


def test_too_few_live_brokers_is_logged_once_then_rate_limited(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    clock = [1000.0]
    monkeypatch.setattr(internal_topic, "usable_brokers", lambda image: [1])
    monkeypatch.setattr(internal_topic.time, "monotonic", lambda: clock[0])
    creator = InternalTopicCreator(OFFSETS_TOPIC, never_called)
    image = MetadataImage.empty()
    caplog.set_level(logging.DEBUG, logger=internal_topic.__name__)
    reasons = set()
    for _ in range(100):  # a consumer group's client asks about ten times a second
        reasons.add(creator.ensure(image, nursery=object()))  # type: ignore[arg-type]
        clock[0] += 0.1
    # The client still hears why, on every answer.
    assert reasons == {"__consumer_offsets cannot be created: 1 live broker(s), "
                       "offsets.topic.replication.factor is 3"}
    lines = [r for r in caplog.records if r.name == internal_topic.__name__]
    assert len(lines) == 1
    assert lines[0].levelno == logging.WARNING
    assert "offsets.topic.replication.factor" in lines[0].getMessage()
    assert "1 on a single node" in lines[0].getMessage()
    clock[0] += internal_topic.REPEAT_LOG_S
    creator.ensure(image, nursery=object())  # type: ignore[arg-type]
    assert len([r for r in caplog.records if r.name == internal_topic.__name__]) == 2
