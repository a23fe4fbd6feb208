"""Clients retrying against an unreachable cluster log the failure once, not per retry."""

from __future__ import annotations

import logging
import socket

import pytest
import trio

from clients.consumer import Consumer
from clients.producer import BlockingProducer, open_producer
from clients.protocol import ErrorCode, KafkaError


@pytest.fixture
def dead_server() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_blocking_producer_warns_once_then_gives_up_after_max_block_ms(
        dead_server: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with BlockingProducer({"bootstrap.servers": dead_server, "max.block.ms": 1000,
                           "retry.backoff.ms": 50}) as producer:
        with pytest.raises(KafkaError) as failed:
            producer.send("t", b"v")
    assert failed.value.code == ErrorCode.REQUEST_TIMED_OUT
    assert len(warnings(caplog)) == 1, warnings(caplog)
    assert warnings(caplog)[0].startswith("metadata refresh failed")
    retries = [r for r in caplog.records if r.getMessage().startswith("metadata refresh")]
    assert len(retries) > 5  # it did retry, quietly


async def test_trio_producer_warns_once(dead_server: str,
                                        caplog: pytest.LogCaptureFixture) -> None:
    async with open_producer({"bootstrap.servers": dead_server, "max.block.ms": 1000,
                              "retry.backoff.ms": 50}) as producer:
        with pytest.raises(KafkaError):
            await producer.send("t", b"v")
    assert len(warnings(caplog)) == 1, warnings(caplog)


async def test_consumer_polling_a_dead_cluster_warns_once(
        dead_server: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with Consumer({"bootstrap.servers": dead_server, "retry.backoff.ms": 50}) as consumer:
        consumer.assign([("t", 0)])
        with trio.fail_after(10):
            assert await consumer.poll(1500) == []
    retries = [r for r in caplog.records if r.getMessage().startswith("metadata refresh")]
    assert len(retries) > 5
    assert len(warnings(caplog)) == 1, warnings(caplog)
