"""A record too large for its topic fails alone: the trio and the blocking producer split a
batch the broker refuses with MESSAGE_TOO_LARGE and deliver the records that fit."""

from __future__ import annotations

import pytest
import trio

from clients.admin import BlockingAdmin, NewTopic
from clients.consumer import BlockingConsumer
from clients.producer import BlockingProducer, open_producer
from clients.protocol import ErrorCode, KafkaError
from tests.integration.quorum_helpers import start_cluster  # noqa: F401  (fixture)

pytestmark = pytest.mark.slow

BIG = b"x" * 8192
# linger.ms far beyond the test: the three records can only leave together, as one batch.
PRODUCER = {"linger.ms": 60000, "client.id": "oversized-test"}


def create_small_topic(bootstrap: str, topic: str) -> None:
    with BlockingAdmin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, 1, 1, {"max.message.bytes": "2000"})])


def values_in(bootstrap: str, topic: str, count: int) -> list[bytes | None]:
    with BlockingConsumer({"bootstrap.servers": bootstrap}) as consumer:
        consumer.assign([(topic, 0)])
        consumer.seek_to_beginning()
        got: list[bytes | None] = []
        for _ in range(50):
            got += [r.value for r in consumer.poll(200)]
            if len(got) >= count:
                break
        return got


def test_producers_deliver_the_records_around_one_that_never_fits(start_cluster) -> None:
    cluster = start_cluster(nodes=1)
    bootstrap = cluster.info.bootstrap_servers
    create_small_topic(bootstrap, "small-trio")
    create_small_topic(bootstrap, "small-blocking")

    async def trio_side() -> list[object]:
        async with open_producer({**PRODUCER, "bootstrap.servers": bootstrap}) as producer:
            futures = [await producer.send("small-trio", v, partition=0)
                       for v in (b"ok1", BIG, b"ok2")]
            await producer.flush()
        return [f.exception() for f in futures]

    trio_errors = trio.run(trio_side)
    with BlockingProducer({**PRODUCER, "bootstrap.servers": bootstrap}) as producer:
        futures = [producer.send("small-blocking", v, partition=0) for v in (b"ok1", BIG, b"ok2")]
        producer.flush(60)
        blocking_errors = [f.exception() for f in futures]

    for topic, errors in (("small-trio", trio_errors), ("small-blocking", blocking_errors)):
        ok1, big, ok2 = errors
        assert ok1 is None and ok2 is None, (topic, errors)
        assert isinstance(big, KafkaError) and big.code == ErrorCode.MESSAGE_TOO_LARGE, big
        assert values_in(bootstrap, topic, 2) == [b"ok1", b"ok2"]


def test_a_record_over_max_request_size_fails_at_send_and_spares_its_batch(
        start_cluster) -> None:
    cluster = start_cluster(nodes=1)
    bootstrap = cluster.info.bootstrap_servers
    with BlockingProducer({**PRODUCER, "bootstrap.servers": bootstrap,
                           "max.request.size": 4096}) as producer:
        first = producer.send("roomy", b"before", partition=0)
        with pytest.raises(KafkaError) as refused:
            producer.send("roomy", BIG, partition=0)
        assert refused.value.code == ErrorCode.MESSAGE_TOO_LARGE
        assert "max.request.size" in str(refused.value)
        last = producer.send("roomy", b"after", partition=0)
        producer.flush(60)
        assert first.succeeded() and last.succeeded()
    assert values_in(bootstrap, "roomy", 2) == [b"before", b"after"]
