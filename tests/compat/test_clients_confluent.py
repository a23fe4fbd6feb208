"""confluent-kafka (librdkafka) against a launcher cluster: idempotent acks=all produce of
10k keyed records with headers per codec, then assign+seek consumption of every byte."""

from __future__ import annotations

import time

import pytest

from tests.compat.cluster import Cluster

confluent_kafka = pytest.importorskip("confluent_kafka")

RECORDS = 10_000
CODECS = ["none", "gzip", "lz4", "snappy", "zstd"]


def expected(codec: str, i: int) -> tuple[bytes, bytes, list[tuple[str, bytes]]]:
    return (f"key-{codec}-{i}".encode(), f"value-{codec}-{i}-".encode() * (1 + i % 7),
            [("h1", f"{i}".encode()), ("codec", codec.encode())])


def produce_all(bootstrap: str, topic: str, codec: str) -> list[int]:
    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
        "compression.type": codec, "linger.ms": 5, "broker.address.family": "v4"})
    offsets: list[int] = []
    errors: list[object] = []

    def delivered(err, msg) -> None:  # type: ignore[no-untyped-def]
        if err is not None:
            errors.append(err)
        else:
            offsets.append(msg.offset())

    for i in range(RECORDS):
        key, value, headers = expected(codec, i)
        while True:
            try:
                producer.produce(topic, value, key, partition=0, headers=headers,
                                 on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(30) == 0
    assert not errors, errors[:3]
    return offsets


def consume_all(bootstrap: str, topic: str, start: int = 0) -> list[object]:
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": "compat-confluent",
        "enable.auto.commit": False, "broker.address.family": "v4"})
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, start)])
        messages: list[object] = []
        deadline = time.monotonic() + 30
        while len(messages) < RECORDS - start and time.monotonic() < deadline:
            for msg in consumer.consume(1000, timeout=0.5):
                assert msg.error() is None, msg.error()
                messages.append(msg)
    finally:
        consumer.close()
    return messages


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_round_trip(cluster: Cluster, codec: str) -> None:
    topic = f"confluent-{codec}"
    cluster.create_topic(topic)
    offsets = produce_all(cluster.bootstrap, topic, codec)
    assert sorted(offsets) == list(range(RECORDS))
    messages = consume_all(cluster.bootstrap, topic)
    assert [m.offset() for m in messages] == list(range(RECORDS))
    for i, msg in enumerate(messages):
        key, value, headers = expected(codec, i)
        assert (msg.key(), msg.value(), msg.headers()) == (key, value, headers)
    # A seek into the middle of a (compressed) batch starts exactly at that offset.
    tail = consume_all(cluster.bootstrap, topic, start=7_777)
    assert [m.offset() for m in tail] == list(range(7_777, RECORDS))
    assert tail[0].value() == expected(codec, 7_777)[1]


def test_transactional_producer_fails_at_once_with_a_message(cluster: Cluster) -> None:
    """No transactions yet: init_transactions fails fast and fatally, saying why, instead of
    retrying FindCoordinator until its timeout (issue 21)."""
    producer = confluent_kafka.Producer({
        "bootstrap.servers": cluster.bootstrap, "transactional.id": "compat-txn",
        "broker.address.family": "v4", "log_level": 0})
    started = time.monotonic()
    with pytest.raises(confluent_kafka.KafkaException) as failure:
        producer.init_transactions(30)
    elapsed = time.monotonic() - started
    error = failure.value.args[0]
    assert error.code() == confluent_kafka.KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert error.fatal() and not error.retriable()
    assert "does not support transactions" in error.str()
    assert elapsed < 10, f"init_transactions took {elapsed:.1f} s"


def test_plaintext_works_and_a_sasl_client_on_a_plaintext_listener_is_refused(
        cluster: Cluster) -> None:
    """librdkafka over PLAINTEXT never asks for SASL; one configured for SASL against a
    PLAINTEXT listener gets ILLEGAL_SASL_STATE for its handshake (as from Kafka) instead of
    getting anywhere."""
    from confluent_kafka.admin import AdminClient

    plain = AdminClient({"bootstrap.servers": cluster.bootstrap, "broker.address.family": "v4"})
    assert plain.list_topics(timeout=10).brokers
    errors: list[str] = []
    sasl = AdminClient({"bootstrap.servers": cluster.bootstrap, "broker.address.family": "v4",
                        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                        "sasl.username": "user", "sasl.password": "secret", "log_level": 0,
                        "error_cb": lambda error: errors.append(error.str())})
    with pytest.raises(confluent_kafka.KafkaException):
        sasl.list_topics(timeout=3)
    sasl.poll(0.5)  # delivers the error callbacks
    assert any("Request not valid in current SASL state" in e for e in errors), errors
