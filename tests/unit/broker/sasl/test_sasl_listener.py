"""A SASL listener over real sockets: SaslHandshake/SaslAuthenticate, the v0 bare-token form,
requests before authentication, failures, KIP-368 expiry, and 10,000 fuzzed SASL frames that
neither crash the server nor leak one connection's state into another."""

from __future__ import annotations

import random
import struct
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import scramp
import trio

from broker.apis.api_versions import install_api_versions
from broker.apis.request import DecodedRequest, RequestContext, RequestRouter
from broker.apis.sasl import SaslHandlers
from broker.config import Listener
from broker.network import NetworkServer, ServerSettings
from broker.sasl.session import ListenerSasl
from broker.sasl.sessions import SaslSessions
from clients.protocol import ApiKey, decode_response, encode_request
from metadata.image import MetadataImage, frozen_map
from metadata.scram import SCRAM_SHA_512, ScramCredential
from tests.unit.broker.network.wire import read_frame

SALT, STORED, SERVER, ITERATIONS = scramp.ScramMechanism("SCRAM-SHA-512").make_auth_info(
    "alice-pw", iteration_count=4096)
IMAGE = MetadataImage(scram_credentials=frozen_map(
    {("alice", SCRAM_SHA_512): ScramCredential(SALT, STORED, SERVER, ITERATIONS)}))


class Principals:
    """A DescribeCluster stand-in that reports who the connection is, so tests see the
    principal each connection carries."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def handle(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        self.seen.append(ctx.principal)
        return {"error_code": 0, "error_message": ctx.principal, "cluster_id": "c",
                "controller_id": -1, "brokers": [], "cluster_authorized_operations": 0,
                "throttle_time_ms": 0}


@asynccontextmanager
async def sasl_server(reauth_ms: int = 0, clock: list[int] | None = None
                      ) -> AsyncIterator[tuple[tuple[str, int], Principals]]:
    router = RequestRouter()
    install_api_versions(router)
    SaslHandlers().register(router)
    principals = Principals()
    router.register(ApiKey.DESCRIBE_CLUSTER, principals.handle)
    settings = {"SASL_PLAINTEXT": ListenerSasl(("PLAIN", "SCRAM-SHA-512"),
                                               {"bob": "bob-pw"}, reauth_ms)}
    now = (lambda: clock[0]) if clock is not None else (lambda: 0)
    server = NetworkServer([Listener("SASL_PLAINTEXT", "127.0.0.1", 0, "SASL_PLAINTEXT")],
                           router,
                           ServerSettings(shutdown_grace_s=2.0,
                                          failed_authentication_delay_s=0.0),
                           sasl=SaslSessions(settings, lambda: IMAGE, now))
    async with trio.open_nursery() as nursery:
        addresses = await nursery.start(server.serve)
        try:
            yield addresses["SASL_PLAINTEXT"], principals
        finally:
            server.stop()


class Client:
    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.correlation = 0

    async def call(self, api_key: int, version: int, body: dict) -> Any:
        self.correlation += 1
        frame = encode_request(api_key, version, self.correlation, "t", body)
        await self.stream.send_all(struct.pack(">i", len(frame)) + frame)
        answer = await read_frame(self.stream)
        if answer is None:
            return None
        return decode_response(api_key, version, answer)[1]

    async def raw(self, token: bytes) -> bytes | None:
        await self.stream.send_all(struct.pack(">i", len(token)) + token)
        return await read_frame(self.stream)

    async def closed(self) -> bool:
        with trio.fail_after(10):
            try:
                while True:
                    if not await self.stream.receive_some(65536):
                        return True
            except trio.BrokenResourceError:
                return True


async def client(address: tuple[str, int]) -> Client:
    return Client(await trio.open_tcp_stream(*address))


async def whoami(c: Client) -> str | None:
    body = await c.call(ApiKey.DESCRIBE_CLUSTER, 0, {})
    return None if body is None else body["error_message"]


async def test_plain_over_sasl_authenticate_gives_the_principal() -> None:
    async with sasl_server() as (address, _):
        c = await client(address)
        assert (await c.call(ApiKey.API_VERSIONS, 3, {})).error_code == 0
        hs = await c.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert hs == {"error_code": 0, "mechanisms": ["PLAIN", "SCRAM-SHA-512"]}
        auth = await c.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0bob\0bob-pw"})
        assert auth["error_code"] == 0 and auth["session_lifetime_ms"] == 0
        assert await whoami(c) == "User:bob"


async def test_scram_sha_512_over_sasl_authenticate() -> None:
    async with sasl_server() as (address, _):
        c = await client(address)
        await c.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-512"})
        scram = scramp.ScramClient(["SCRAM-SHA-512"], "alice", "alice-pw")
        first = await c.call(ApiKey.SASL_AUTHENTICATE, 1,
                             {"auth_bytes": scram.get_client_first().encode()})
        scram.set_server_first(bytes(first["auth_bytes"]).decode())
        final = await c.call(ApiKey.SASL_AUTHENTICATE, 1,
                             {"auth_bytes": scram.get_client_final().encode()})
        assert final["error_code"] == 0
        scram.set_server_final(bytes(final["auth_bytes"]).decode())  # the server proved itself too
        assert await whoami(c) == "User:alice"


async def test_v0_handshake_then_bare_tokens() -> None:
    async with sasl_server() as (address, _):
        c = await client(address)
        assert (await c.call(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"}))["error_code"] == 0
        assert await c.raw(b"\0bob\0bob-pw") == b""
        assert await whoami(c) == "User:bob"
        bad = await client(address)
        await bad.call(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})
        assert await bad.raw(b"\0bob\0wrong") is None  # the bare form can only close


async def test_a_wrong_password_is_answered_then_closed() -> None:
    async with sasl_server() as (address, principals):
        c = await client(address)
        await c.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        auth = await c.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0bob\0nope"})
        assert auth["error_code"] == 58
        assert auth["error_message"] == "Authentication failed: Invalid username or password"
        assert await c.closed()
        assert principals.seen == []


async def test_a_request_before_authentication_closes_the_connection() -> None:
    async with sasl_server() as (address, principals):
        c = await client(address)
        body = await c.call(ApiKey.DESCRIBE_CLUSTER, 0, {})
        assert body is not None and body["error_code"] == 34  # ILLEGAL_SASL_STATE
        assert await c.closed()
        c = await client(address)
        await c.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        await c.call(ApiKey.DESCRIBE_CLUSTER, 0, {})
        assert await c.closed()
        assert principals.seen == []


async def test_unsupported_mechanism() -> None:
    async with sasl_server() as (address, _):
        c = await client(address)
        hs = await c.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"})
        assert hs == {"error_code": 33, "mechanisms": ["PLAIN", "SCRAM-SHA-512"]}
        assert await c.closed()


async def test_an_expired_session_is_closed_unless_reauthenticated() -> None:
    clock = [0]
    async with sasl_server(reauth_ms=1000, clock=clock) as (address, _):
        stale, renewed = await client(address), await client(address)
        for c in (stale, renewed):
            await c.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
            auth = await c.call(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\0bob\0bob-pw"})
            assert auth["session_lifetime_ms"] == 1000
        clock[0] = 1000
        await renewed.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        auth = await renewed.call(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\0bob\0bob-pw"})
        assert auth["error_code"] == 0
        assert await whoami(renewed) == "User:bob"
        assert await stale.call(ApiKey.DESCRIBE_CLUSTER, 0, {}) is None  # closed, unanswered


def _fuzz_frame(rng: random.Random) -> bytes:
    kind = rng.randrange(6)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
    if kind == 1:
        return encode_request(ApiKey.SASL_HANDSHAKE, rng.randrange(2), rng.randrange(99), "f",
                              {"mechanism": rng.choice(["PLAIN", "SCRAM-SHA-512", "", "x"])})
    token = rng.choice([b"", b"\0bob\0", b"\0bob\0bob-pw\0", b"n,,n=alice,r=x", b"\xff" * 9,
                        bytes(rng.randrange(256) for _ in range(rng.randrange(40)))])
    if kind == 2:
        return encode_request(ApiKey.SASL_AUTHENTICATE, rng.randrange(3), 1, "f",
                              {"auth_bytes": token})
    frame = bytearray(encode_request(ApiKey.SASL_AUTHENTICATE, 2, 1, "f", {"auth_bytes": token}))
    for _ in range(rng.randrange(1, 4)):  # corrupt a few bytes of a valid frame
        frame[rng.randrange(len(frame))] = rng.randrange(256)
    return bytes(frame)


async def test_ten_thousand_fuzzed_sasl_frames() -> None:
    rng = random.Random(15)
    async with sasl_server() as (address, principals):
        good = await client(address)
        await good.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        await good.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0bob\0bob-pw"})
        sent = 0
        fuzz: Client | None = None
        while sent < 10_000:
            if fuzz is None:
                fuzz = await client(address)
            frame = _fuzz_frame(rng)
            try:
                await fuzz.stream.send_all(struct.pack(">i", len(frame)) + frame)
                sent += 1
                with trio.move_on_after(0.2):
                    answer = await read_frame(fuzz.stream)
                    if answer is None:
                        await fuzz.stream.aclose()
                        fuzz = None
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                await fuzz.stream.aclose()
                fuzz = None
            if fuzz is not None and sent % 50 == 0:
                # A fuzzed connection never inherits the good connection's principal.
                await fuzz.stream.aclose()
                fuzz = None
        assert await whoami(good) == "User:bob"
        assert principals.seen == ["User:bob"]
        fresh = await client(address)
        await fresh.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        auth = await fresh.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0bob\0bob-pw"})
        assert auth["error_code"] == 0
