"""The I/O-free parts: frame splitting, versions, correlation ids, address parsing."""

from __future__ import annotations

import struct

import pytest

from clients.net import parse_bootstrap_servers
from clients.net.session import FrameBuffer, ProtocolSession
from clients.protocol import (
    ApiKey,
    ErrorCode,
    KafkaError,
    ProtocolError,
    decode_request,
    encode_response,
)
from clients.protocol.messages.api_versions import ApiVersionsResponseData


def prefixed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def test_frame_buffer_reassembles_frames_fed_byte_by_byte() -> None:
    frames = FrameBuffer()
    stream = prefixed(b"one") + prefixed(b"") + prefixed(b"three!")
    out = []
    for i in range(len(stream)):
        frames.feed(stream[i:i + 1])
        while (frame := frames.next_frame()) is not None:
            out.append(frame)
    assert out == [b"one", b"", b"three!"]
    assert frames.bytes_wanted() == 4


def test_frame_buffer_reports_bytes_wanted() -> None:
    frames = FrameBuffer()
    frames.feed(struct.pack(">i", 10) + b"abc")
    assert frames.next_frame() is None
    assert frames.bytes_wanted() == 7


def test_frame_buffer_rejects_negative_size() -> None:
    frames = FrameBuffer()
    frames.feed(struct.pack(">i", -1))
    with pytest.raises(ProtocolError, match="negative"):
        frames.next_frame()


def negotiated(versions: dict[int, tuple[int, int]]) -> ProtocolSession:
    session = ProtocolSession("c")
    request = session.api_versions_request()
    answer = encode_response(ApiKey.API_VERSIONS, 3, request.correlation_id,
                             ApiVersionsResponseData(api_keys=[
                                 ApiVersionsResponseData.ApiVersion(
                                     api_key=k, min_version=lo, max_version=hi)
                                 for k, (lo, hi) in versions.items()]))
    session.apply_api_versions(request, answer)
    return session


def test_request_frames_carry_size_prefix_and_increasing_correlation_ids() -> None:
    session = negotiated({3: (0, 12)})
    first = session.build_request(ApiKey.METADATA, {"topics": None})
    second = session.build_request(ApiKey.METADATA, {"topics": None})
    assert struct.unpack_from(">i", first.data)[0] == len(first.data) - 4
    decoded = decode_request(first.data[4:])
    assert (decoded.api_key, decoded.client_id) == (ApiKey.METADATA, "c")
    assert second.correlation_id == first.correlation_id + 1


def test_api_versions_error_other_than_unsupported_raises() -> None:
    session = ProtocolSession("c")
    request = session.api_versions_request()
    answer = encode_response(ApiKey.API_VERSIONS, 3, request.correlation_id,
                             ApiVersionsResponseData(error_code=ErrorCode.INVALID_REQUEST))
    with pytest.raises(KafkaError) as info:
        session.apply_api_versions(request, answer)
    assert info.value.code == ErrorCode.INVALID_REQUEST
    assert not session.negotiated


def test_pick_version_intersects_both_ranges() -> None:
    session = negotiated({3: (5, 100)})
    assert session.version_range(ApiKey.METADATA) == (5, 12)
    assert session.pick_version(ApiKey.METADATA) == 12
    assert session.pick_version(ApiKey.METADATA, 5) == 5
    with pytest.raises(KafkaError):
        session.pick_version(ApiKey.METADATA, 4)
    with pytest.raises(KafkaError):
        session.pick_version(ApiKey.FETCH)


@pytest.mark.parametrize(("spec", "expected"), [
    ("localhost:9092", [("localhost", 9092)]),
    (" a:1 , b:2 ,", [("a", 1), ("b", 2)]),
    ("[::1]:9092", [("::1", 9092)]),
    ("[fe80::1%eth0]:19092,h:1", [("fe80::1%eth0", 19092), ("h", 1)]),
    ("::1:9092", [("::1", 9092)]),
    ("PLAINTEXT://broker-1:9093", [("broker-1", 9093)]),
])
def test_parse_bootstrap_servers_accepts(spec: str, expected: list[tuple[str, int]]) -> None:
    assert parse_bootstrap_servers(spec) == expected


@pytest.mark.parametrize(("spec", "message"), [
    ("", "no server addresses"),
    (" , ", "no server addresses"),
    ("localhost", "expected HOST:PORT"),
    ("localhost:", "port must be a number"),
    ("localhost:abc", "port must be a number"),
    (":9092", "host is empty"),
    ("h:0", "outside 1-65535"),
    ("h:70000", "outside 1-65535"),
    ("[::1]9092", r"expected \[IPV6\]:PORT"),
    ("[::1", r"expected \[IPV6\]:PORT"),
])
def test_parse_bootstrap_servers_rejects(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_bootstrap_servers(spec)


def test_frame_buffer_detaches_a_large_incomplete_frame_with_its_received_part() -> None:
    frames = FrameBuffer()
    frames.feed(struct.pack(">i", 10) + b"abc")
    assert frames.detach_frame(min_size=11) is None  # smaller frames stay buffered
    frame, filled = frames.detach_frame(min_size=10)
    assert (bytes(frame[:filled]), len(frame)) == (b"abc", 10)
    assert frames.bytes_wanted() == 4  # the buffer gave the frame away
    frames.feed(prefixed(b"done"))
    assert frames.detach_frame(min_size=1) is None  # complete: next_frame's
    assert frames.next_frame() == b"done"
