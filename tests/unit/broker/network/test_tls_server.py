"""The network server's TLS listeners over real loopback sockets: handlers see the client
certificate's principal, and a failure while setting up TLS ends that connection only."""

from __future__ import annotations

import re
import ssl
from contextlib import asynccontextmanager
from typing import AsyncIterator

import pytest
import trio
import trustme

import clients.protocol as codec
from broker.apis.api_versions import install_api_versions
from broker.apis.request import RequestRouter
from broker.config import Listener
from broker.network import NetworkServer, ServerSettings
from clients.net import ClientSecurity, KafkaConnection, KafkaConnectionError
from clients.protocol import ApiKey

LIST_GROUPS = 16


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def contexts(ca: trustme.CA, with_certificate: bool) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(server)
    ca.configure_trust(server)
    server.verify_mode = ssl.CERT_OPTIONAL
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ca.configure_trust(client)
    if with_certificate:
        ca.issue_cert("carol.example", common_name="carol").configure_cert(client)
    return server, client


@asynccontextmanager
async def tls_server(server_context: ssl.SSLContext, seen: list[str]
                     ) -> AsyncIterator[tuple[str, int]]:
    router = RequestRouter()
    install_api_versions(router, codec.SUPPORTED_VERSIONS)

    async def list_groups(request, ctx):  # type: ignore[no-untyped-def]
        seen.append(ctx.principal)
        return {"error_code": 0, "groups": []}

    router.register(LIST_GROUPS, list_groups)
    server = NetworkServer([Listener("SSL", "127.0.0.1", 0, "SSL")], router,
                           ServerSettings(shutdown_grace_s=2.0),
                           ssl_contexts={"SSL": server_context})
    async with trio.open_nursery() as nursery:
        addresses = await nursery.start(server.serve)
        try:
            yield addresses["SSL"]
        finally:
            server.stop()


# trustme adds its own unit and organisation after the common name.
@pytest.mark.parametrize("with_certificate, principal", [
    (True, r"User:CN=carol,OU=Testing cert #[\w-]+,O=trustme v[0-9.]+"), (False, "User:ANONYMOUS")])
async def test_handlers_see_the_certificate_principal(
        ca: trustme.CA, with_certificate: bool, principal: str) -> None:
    server_context, client_context = contexts(ca, with_certificate)
    seen: list[str] = []
    async with tls_server(server_context, seen) as (host, port):
        conn = await KafkaConnection.connect(host, port,
                                             security=ClientSecurity("SSL", client_context))
        async with conn:
            await conn.request(ApiKey.LIST_GROUPS, {})
    assert len(seen) == 1 and re.fullmatch(principal, seen[0])


async def test_a_failing_tls_set_up_ends_that_connection_only(
        ca: trustme.CA, monkeypatch: pytest.MonkeyPatch) -> None:
    import broker.network.server as server_module

    server_context, client_context = contexts(ca, True)
    security = ClientSecurity("SSL", client_context)
    real = server_module.peer_principal
    calls = [0]

    def fails_once(tls):  # type: ignore[no-untyped-def]
        calls[0] += 1
        if calls[0] == 1:
            raise ValueError("an unparsable certificate")
        return real(tls)

    monkeypatch.setattr(server_module, "peer_principal", fails_once)
    seen: list[str] = []
    async with tls_server(server_context, seen) as (host, port):
        with pytest.raises(KafkaConnectionError):
            await KafkaConnection.connect(host, port, security=security, timeout=5)
        conn = await KafkaConnection.connect(host, port, security=security)
        async with conn:
            await conn.request(ApiKey.LIST_GROUPS, {})
    assert len(seen) == 1 and seen[0].startswith("User:CN=carol,")


async def test_an_oversized_or_stalled_frame_over_tls_closes_that_connection_only(
        ca: trustme.CA, caplog: pytest.LogCaptureFixture) -> None:
    """The TLS path reads through the stream's receive_some: the size is checked before
    anything is allocated, and a frame stalling half-way meets the read timeout."""
    server_context, client_context = contexts(ca, False)
    router = RequestRouter()
    install_api_versions(router, codec.SUPPORTED_VERSIONS)
    server = NetworkServer([Listener("SSL", "127.0.0.1", 0, "SSL")], router,
                           ServerSettings(shutdown_grace_s=2.0, max_request_bytes=1 << 20,
                                          request_read_timeout_s=0.3),
                           ssl_contexts={"SSL": server_context})

    async def tls_connect(address: tuple[str, int]) -> trio.SSLStream:
        stream = trio.SSLStream(await trio.open_tcp_stream(*address), client_context,
                                server_hostname="127.0.0.1")
        await stream.do_handshake()
        return stream

    async def closed(stream: trio.SSLStream) -> bool:
        with trio.fail_after(5):
            try:
                return await stream.receive_some(1) == b""
            except trio.BrokenResourceError:
                return True

    async with trio.open_nursery() as nursery:
        address = (await nursery.start(server.serve))["SSL"]
        try:
            oversized = await tls_connect(address)
            await oversized.send_all(((1 << 20) + 1).to_bytes(4, "big") + b"\0" * 16)
            assert await closed(oversized)
            stalled = await tls_connect(address)
            await stalled.send_all((1000).to_bytes(4, "big") + b"\0" * 10)
            assert await closed(stalled)
            conn = await KafkaConnection.connect(*address,
                                                 security=ClientSecurity("SSL", client_context))
            async with conn:
                await conn.request(ApiKey.API_VERSIONS, {})
        finally:
            server.stop()
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "exceeds socket.request.max.bytes" in messages
    assert "raftka.socket.request.read.timeout.ms" in messages
