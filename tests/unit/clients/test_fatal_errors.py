"""A refused authentication and a security protocol mismatch end a client at once, with
the cause, instead of being retried until max.block.ms or default.api.timeout.ms: stub
brokers that answer as a SASL listener does (real codec, real sockets)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
import trio

from clients.admin import Admin, BlockingAdmin
from clients.consumer import Consumer
from clients.net import (
    PLAINTEXT,
    AuthenticationFailedError,
    BlockingKafkaConnection,
    ClientSecurity,
    FatalConnectionError,
    KafkaConnection,
    KafkaConnectionError,
    SecurityProtocolMismatchError,
)
from clients.producer import BlockingProducer, open_producer
from clients.protocol import ApiKey, ErrorCode, Request
from tests.unit.clients.stub_broker import StubBroker
from tests.unit.clients.net.test_blocking_connection import in_thread

BROKER_MESSAGE = "Authentication failed: Invalid username or password"
# Far below the 60 s the clients retried for.
FAST_S = 10


async def sasl_listener(nursery: trio.Nursery) -> StubBroker:
    """A SASL/PLAIN listener that refuses every password, as Raftka's and Kafka's do, and
    refuses requests sent before authenticating with ILLEGAL_SASL_STATE."""
    def refused_metadata(request: Request) -> dict[str, Any]:
        return {"brokers": [], "cluster_id": None, "controller_id": -1, "topics": [
            {"name": t.name, "error_code": ErrorCode.ILLEGAL_SASL_STATE, "partitions": []}
            for t in request.body.topics or ()]}

    return await StubBroker({
        ApiKey.SASL_HANDSHAKE: lambda r: {"error_code": 0, "mechanisms": ["PLAIN"]},
        ApiKey.SASL_AUTHENTICATE: lambda r: {
            "error_code": ErrorCode.SASL_AUTHENTICATION_FAILED,
            "error_message": BROKER_MESSAGE, "auth_bytes": b""},
        ApiKey.METADATA: refused_metadata,
    }).start(nursery)


def with_password(broker: StubBroker) -> dict[str, Any]:
    return {"bootstrap.servers": f"127.0.0.1:{broker.port}",
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": "alice", "sasl.password": "wrong"}


def check_refusal(error: AuthenticationFailedError, broker: StubBroker) -> None:
    assert str(error) == (f"authentication failed at 127.0.0.1:{broker.port} (PLAIN as "
                          f"alice): {BROKER_MESSAGE}")
    assert error.code == ErrorCode.SASL_AUTHENTICATION_FAILED


async def test_the_trio_producer_stops_at_a_refused_password(nursery: trio.Nursery) -> None:
    broker = await sasl_listener(nursery)
    async with open_producer(with_password(broker)) as producer:
        with trio.fail_after(FAST_S), pytest.raises(AuthenticationFailedError) as refused:
            await producer.send("t", b"v")
        check_refusal(refused.value, broker)
        # Fatal: every later call raises it, without trying again.
        tried = broker.connections
        with pytest.raises(AuthenticationFailedError) as again:
            await producer.send("t", b"v")
        assert again.value is refused.value
        with pytest.raises(AuthenticationFailedError):
            await producer.flush()
        assert broker.connections == tried


async def test_the_blocking_producer_stops_at_a_refused_password(
        nursery: trio.Nursery) -> None:
    broker = await sasl_listener(nursery)

    def run() -> tuple[BaseException, BaseException]:
        with BlockingProducer(with_password(broker)) as producer:
            with pytest.raises(AuthenticationFailedError) as first:
                producer.send("t", b"v")
            with pytest.raises(AuthenticationFailedError) as second:
                producer.send("t", b"v")
        return first.value, second.value

    with trio.fail_after(FAST_S):
        first, second = await in_thread(run)
    check_refusal(first, broker)  # type: ignore[arg-type]
    assert second is first


async def test_the_consumer_raises_a_refused_password_from_poll(
        nursery: trio.Nursery) -> None:
    broker = await sasl_listener(nursery)
    async with Consumer(with_password(broker)) as consumer:
        consumer.assign([("t", 0)])
        with trio.fail_after(FAST_S), pytest.raises(AuthenticationFailedError) as refused:
            await consumer.poll(FAST_S * 2000)
        check_refusal(refused.value, broker)
        with pytest.raises(AuthenticationFailedError):
            await consumer.poll(0)


async def test_admin_calls_fail_at_once_on_a_refused_password(nursery: trio.Nursery) -> None:
    broker = await sasl_listener(nursery)
    async with Admin(with_password(broker)) as admin:
        with trio.fail_after(FAST_S), pytest.raises(AuthenticationFailedError) as refused:
            await admin.list_topics()
        check_refusal(refused.value, broker)

    def run() -> BaseException:
        with BlockingAdmin(with_password(broker)) as blocking:
            with pytest.raises(AuthenticationFailedError) as failed:
                blocking.describe_cluster()
        return failed.value

    with trio.fail_after(FAST_S):
        check_refusal(await in_thread(run), broker)  # type: ignore[arg-type]


async def test_a_client_without_sasl_on_a_sasl_listener_is_told_so(
        nursery: trio.Nursery) -> None:
    broker = await sasl_listener(nursery)
    plaintext = {"bootstrap.servers": f"127.0.0.1:{broker.port}"}
    expected = (f"security protocol mismatch: 127.0.0.1:{broker.port} is a SASL listener "
                "(mechanisms: PLAIN) but security.protocol is PLAINTEXT, which sends no "
                "credentials; use SASL_PLAINTEXT with sasl.mechanism and a user")
    async with open_producer(plaintext) as producer:
        with trio.fail_after(FAST_S), pytest.raises(SecurityProtocolMismatchError) as told:
            await producer.send("t", b"v")
    assert str(told.value) == expected
    # The admin client's first request names no topic: the answer lists no broker.
    async with Admin(plaintext) as admin:
        with trio.fail_after(FAST_S), pytest.raises(SecurityProtocolMismatchError) as told:
            await admin.list_topics()
    assert str(told.value) == expected


async def test_a_listener_closing_every_connection_is_no_mismatch(
        nursery: trio.Nursery) -> None:
    """A broker going away (or refusing connections over a limit) closes them without an
    answer too: the probes find neither TLS, nor plaintext Kafka, nor SASL there, so the
    error stays one to retry."""
    async def close_at_once(stream: trio.SocketStream) -> None:
        await stream.aclose()

    listeners = await nursery.start(partial(trio.serve_tcp, close_at_once, 0,
                                            host="127.0.0.1"))
    port = listeners[0].socket.getsockname()[1]
    tls = ClientSecurity.from_config({"security.protocol": "SSL"})
    for security in (PLAINTEXT, tls):
        with trio.fail_after(FAST_S), pytest.raises(KafkaConnectionError) as failed:
            await KafkaConnection.connect("127.0.0.1", port, security=security, diagnose=True)
        assert not isinstance(failed.value, FatalConnectionError), failed.value

    def blocking() -> list[BaseException]:
        errors = []
        for security in (PLAINTEXT, tls):
            try:
                BlockingKafkaConnection("127.0.0.1", port, security=security, diagnose=True)
            except KafkaConnectionError as exc:
                errors.append(exc)
        return errors

    with trio.fail_after(FAST_S):
        errors = await in_thread(blocking)
    assert len(errors) == 2
    assert not [e for e in errors if isinstance(e, FatalConnectionError)], errors
