"""The listener side of TLS over in-memory streams: the handshake, the principal of a
verified client certificate, and refusals."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
import trio
import trio.testing
import trustme

from broker.network.tls import HandshakeFailed, accept_tls, peer_principal, subject_dn


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def server_context(ca: trustme.CA, mode: ssl.VerifyMode) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    ca.configure_trust(context)
    context.verify_mode = mode
    return context


def client_context(ca: trustme.CA, with_certificate: bool) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ca.configure_trust(context)
    if with_certificate:
        ca.issue_cert("alice.example", common_name="alice", organization_unit_name="eng",
                      organization_name="Example, Inc.").configure_cert(context)
    return context


async def handshake(server: ssl.SSLContext, client: ssl.SSLContext
                    ) -> tuple[trio.SSLStream | BaseException, trio.SSLStream]:
    server_end, client_end = trio.testing.memory_stream_pair()
    client_tls = trio.SSLStream(client_end, client, server_hostname="127.0.0.1")
    result: list[trio.SSLStream | BaseException] = []

    async def serve() -> None:
        try:
            result.append(await accept_tls(server_end, server, timeout_s=5))  # type: ignore[arg-type]
        except HandshakeFailed as exc:
            result.append(exc)
            await trio.aclose_forcefully(server_end)

    async def connect() -> None:
        try:
            await client_tls.do_handshake()
        except trio.BrokenResourceError:
            pass

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve)
        nursery.start_soon(connect)
    return result[0], client_tls


async def test_a_verified_client_certificate_is_the_principal(ca: trustme.CA) -> None:
    server, _ = await handshake(server_context(ca, ssl.CERT_REQUIRED),
                                client_context(ca, with_certificate=True))
    assert isinstance(server, trio.SSLStream)
    assert peer_principal(server) == r"User:CN=alice,OU=eng,O=Example\, Inc."


async def test_without_a_client_certificate_the_principal_is_left_anonymous(
        ca: trustme.CA) -> None:
    server, _ = await handshake(server_context(ca, ssl.CERT_OPTIONAL),
                                client_context(ca, with_certificate=False))
    assert isinstance(server, trio.SSLStream)
    assert peer_principal(server) is None


async def test_required_client_auth_fails_the_handshake_without_a_certificate(
        ca: trustme.CA) -> None:
    server, _ = await handshake(server_context(ca, ssl.CERT_REQUIRED),
                                client_context(ca, with_certificate=False))
    assert isinstance(server, HandshakeFailed)


async def test_a_silent_peer_is_given_up_on() -> None:
    server_end, _client_end = trio.testing.memory_stream_pair()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with pytest.raises(HandshakeFailed, match="no TLS handshake within"):
        await accept_tls(server_end, context, timeout_s=0.2)  # type: ignore[arg-type]


def test_subject_dn_is_rfc_2253_most_specific_first(ca: trustme.CA) -> None:
    issued = ca.issue_cert("bob.example", common_name="bob", organization_unit_name="ops")
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding

    der = x509.load_pem_x509_certificate(issued.cert_chain_pems[0].bytes()).public_bytes(
        Encoding.DER)
    assert subject_dn(der).startswith("CN=bob,OU=ops")


async def test_file_ranges_go_out_read_whole_on_a_stream_without_sendfile(
        tmp_path: Path) -> None:
    import os

    from broker.log.results import FileRange
    from broker.network.transport import write_response

    payload = os.urandom(300_000)
    path = tmp_path / "segment.log"
    path.write_bytes(b"head" + payload)
    fd = os.open(path, os.O_RDONLY)
    try:
        sender, receiver = trio.testing.memory_stream_pair()
        chunks = [b"header", FileRange(fd, 4, len(payload)), b"trailer"]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(write_response, sender, chunks)
            received = bytearray()
            expected = 4 + 6 + len(payload) + 7
            while len(received) < expected:
                received += await receiver.receive_some()
    finally:
        os.close(fd)
    assert bytes(received) == (expected - 4).to_bytes(4, "big") + b"header" + payload + \
        b"trailer"


def test_a_tls_listener_without_a_context_is_refused() -> None:
    from broker.apis.request import RequestRouter
    from broker.config.endpoints import Listener
    from broker.network import NetworkServer

    with pytest.raises(ValueError, match="no TLS context"):
        NetworkServer([Listener("SSL", "127.0.0.1", 0, "SSL")], RequestRouter())


@pytest.mark.parametrize("algorithm, verified", [("https", False), ("", True)])
async def test_endpoint_identification_checks_the_host_name(
        ca: trustme.CA, tmp_path: Path, algorithm: str, verified: bool) -> None:
    from clients.net.tls import TlsSettings
    from clients.net.tls_context import build_context

    trust = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(trust))
    client = build_context(TlsSettings.from_mapping({
        "ssl.truststore.location": str(trust),
        "ssl.endpoint.identification.algorithm": algorithm}), server_side=False)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("elsewhere.example").configure_cert(server)
    server_end, client_end = trio.testing.memory_stream_pair()
    client_tls = trio.SSLStream(client_end, client, server_hostname="127.0.0.1")
    outcome: list[bool] = []

    async def connect() -> None:
        try:
            await client_tls.do_handshake()
            outcome.append(True)
        except trio.BrokenResourceError:
            outcome.append(False)
            await trio.aclose_forcefully(client_end)

    async def serve() -> None:
        try:
            await accept_tls(server_end, server, timeout_s=5)  # type: ignore[arg-type]
        except HandshakeFailed:
            pass

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve)
        nursery.start_soon(connect)
    assert outcome == [verified]
