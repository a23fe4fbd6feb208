"""`__consumer_offsets` creation: too few brokers is said once, not on every FindCoordinator."""

from __future__ import annotations

import logging

import pytest

from broker.group import offsets_topic
from broker.group.offsets_topic import OffsetsTopicCreator, OffsetsTopicSettings
from metadata.image import MetadataImage


async def never_called(topic: dict) -> tuple[int, str | None]:
    raise AssertionError("no creation with too few brokers")


def test_too_few_live_brokers_is_logged_once_then_rate_limited(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    clock = [1000.0]
    monkeypatch.setattr(offsets_topic, "usable_brokers", lambda image: [1])
    monkeypatch.setattr(offsets_topic.time, "monotonic", lambda: clock[0])
    creator = OffsetsTopicCreator(OffsetsTopicSettings(replication_factor=3), never_called)
    image = MetadataImage.empty()
    caplog.set_level(logging.DEBUG, logger=offsets_topic.__name__)
    reasons = set()
    for _ in range(100):  # a consumer group's client asks about ten times a second
        reasons.add(creator.ensure(image, nursery=object()))  # type: ignore[arg-type]
        clock[0] += 0.1
    # The client still hears why, on every answer.
    assert reasons == {"__consumer_offsets cannot be created: 1 live broker(s), "
                       "offsets.topic.replication.factor is 3"}
    lines = [r for r in caplog.records if r.name == offsets_topic.__name__]
    assert len(lines) == 1
    assert lines[0].levelno == logging.WARNING
    assert "offsets.topic.replication.factor" in lines[0].getMessage()
    assert "1 on a single node" in lines[0].getMessage()
    clock[0] += offsets_topic.REPEAT_LOG_S
    creator.ensure(image, nursery=object())  # type: ignore[arg-type]
    assert len([r for r in caplog.records if r.name == offsets_topic.__name__]) == 2
