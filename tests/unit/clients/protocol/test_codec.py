"""Exact encodings, headers, version rules and zero-copy behaviour of the codec."""

from __future__ import annotations

import struct
import tracemalloc
import uuid

import pytest

from clients.protocol import (
    ApiKey,
    ErrorCode,
    KafkaError,
    ProtocolError,
    UnsupportedVersionError,
    ZERO_UUID,
    chunks_size,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    encode_response_chunks,
    request_header_version,
    response_header_version,
)
from clients.protocol.messages.api_versions import ApiVersionsResponseData
from clients.records.header import compute_crc, iter_batches, parse_header


def test_request_header_v1_layout() -> None:
    frame = encode_request(ApiKey.HEARTBEAT, 0, 7, "cid", {"group_id": "g", "generation_id": 3, "member_id": "m"})
    assert frame == (
        struct.pack(">hhih", 12, 0, 7, 3) + b"cid"
        + struct.pack(">h", 1) + b"g" + struct.pack(">i", 3) + struct.pack(">h", 1) + b"m"
    )


def test_request_header_v2_keeps_a_non_compact_client_id_and_adds_tagged_fields() -> None:
    frame = encode_request(ApiKey.HEARTBEAT, 4, 9, None, {"group_id": "g", "member_id": "m"})
    # header: key, version, correlation id, null client id (int16 -1), no tagged fields;
    # body: compact strings (length + 1), a null compact string, then empty tagged fields.
    assert frame == (
        struct.pack(">hhih", 12, 4, 9, -1) + b"\x00"
        + b"\x02g" + struct.pack(">i", 0) + b"\x02m" + b"\x00" + b"\x00"
    )
    request = decode_request(frame)
    assert request.header_version == 2
    assert request.client_id is None
    assert request.body.group_instance_id is None


def test_api_versions_response_always_uses_header_v0() -> None:
    assert response_header_version(ApiKey.API_VERSIONS, 3) == 0
    assert request_header_version(ApiKey.API_VERSIONS, 3) == 2
    assert response_header_version(ApiKey.METADATA, 9) == 1
    frame = encode_response(ApiKey.API_VERSIONS, 3, 5, ApiVersionsResponseData(api_keys=[
        ApiVersionsResponseData.ApiVersion(api_key=0, min_version=3, max_version=9)]))
    # correlation id then the error code directly: no header tagged-field byte.
    assert frame[:6] == struct.pack(">ih", 5, 0)
    assert decode_response(ApiKey.API_VERSIONS, 3, frame)[1].api_keys[0].max_version == 9


def test_unsupported_version_is_reported_with_the_correlation_id() -> None:
    frame = struct.pack(">hhih", ApiKey.API_VERSIONS, 99, 1234, 1) + b"x" + b"\x00" * 4
    with pytest.raises(UnsupportedVersionError) as info:
        decode_request(frame)
    assert (info.value.api_key, info.value.api_version, info.value.correlation_id) == (18, 99, 1234)
    unknown_api = struct.pack(">hhih", 9999, 0, 77, -1)
    with pytest.raises(UnsupportedVersionError) as info:
        decode_request(unknown_api)
    assert info.value.correlation_id == 77


def test_truncated_header_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        decode_request(b"\x00\x03\x00")


def test_missing_fields_take_kafka_defaults() -> None:
    _, body = decode_response(ApiKey.METADATA, 12, encode_response(ApiKey.METADATA, 12, 1, {}))
    assert body["controller_id"] == -1
    assert body["cluster_id"] is None
    assert body["brokers"] == [] and body["topics"] == []
    assert body["cluster_authorized_operations"] == -(2**31)  # absent in v12: its default


def test_non_default_value_in_a_field_absent_from_the_version_is_rejected() -> None:
    # group_instance_id exists from v3; it is not ignorable.
    with pytest.raises(ProtocolError, match="group_instance_id"):
        encode_request(ApiKey.HEARTBEAT, 2, 1, None, {"group_id": "g", "group_instance_id": "static"})
    # default values are fine
    encode_request(ApiKey.HEARTBEAT, 2, 1, None, {"group_id": "g", "group_instance_id": None})


def test_ignorable_field_absent_from_the_version_is_dropped() -> None:
    frame = encode_response(ApiKey.METADATA, 0, 1, {"throttle_time_ms": 100, "cluster_id": "c"})
    _, body = decode_response(ApiKey.METADATA, 0, frame)
    assert body["throttle_time_ms"] == 0 and body["cluster_id"] is None


def test_null_in_a_non_nullable_field_is_rejected_both_ways() -> None:
    with pytest.raises(ProtocolError):
        encode_request(ApiKey.HEARTBEAT, 0, 1, None, {"group_id": None})
    null_group = struct.pack(">hhih", 12, 0, 1, -1) + struct.pack(">h", -1) + struct.pack(">i", 0) + b"\x00\x00"
    with pytest.raises(ProtocolError):
        decode_request(null_group)


def test_tagged_fields_round_trip_and_unknown_tags_are_skipped() -> None:
    body = ApiVersionsResponseData(finalized_features_epoch=42, zk_migration_ready=True,
                                   supported_features=[ApiVersionsResponseData.SupportedFeatureKey(
                                       name="metadata.version", min_version=1, max_version=20)])
    frame = encode_response(ApiKey.API_VERSIONS, 3, 1, body)
    _, decoded = decode_response(ApiKey.API_VERSIONS, 3, frame)
    assert decoded == body
    assert decoded.finalized_features_epoch == 42 and decoded.zk_migration_ready is True
    assert decoded.supported_features[0].name == "metadata.version"
    # Heartbeat v4 request: append an unknown tag 7 with 3 bytes to the body's tagged fields.
    plain = encode_request(ApiKey.HEARTBEAT, 4, 1, None, {"group_id": "g"})
    assert plain.endswith(b"\x00")
    with_unknown = plain[:-1] + b"\x01\x07\x03abc"
    assert decode_request(with_unknown).body.group_id == "g"


def test_default_tagged_fields_are_not_written() -> None:
    frame = encode_response(ApiKey.API_VERSIONS, 3, 1,
                            ApiVersionsResponseData(finalized_features_epoch=-1))
    assert frame.endswith(b"\x00")


def test_trailing_bytes_are_ignored() -> None:
    frame = encode_request(ApiKey.HEARTBEAT, 0, 1, None, {"group_id": "g"})
    assert decode_request(frame + b"garbage").body.group_id == "g"


def test_array_length_beyond_the_frame_fails_before_allocating() -> None:
    # Metadata v1 request claiming 2**31-1 topics in a 20-byte frame.
    frame = struct.pack(">hhih", 3, 1, 1, -1) + struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 8
    tracemalloc.start()
    try:
        with pytest.raises(ProtocolError):
            decode_request(frame)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024


@pytest.mark.parametrize("bad_length", [-2, -(2**15), 0x7FFF])
def test_bad_string_lengths_are_rejected(bad_length: int) -> None:
    frame = struct.pack(">hhih", 12, 0, 1, -1) + struct.pack(">h", bad_length) + b"abc"
    with pytest.raises(ProtocolError):
        decode_request(frame)


def test_bad_varint_is_rejected() -> None:
    frame = struct.pack(">hhih", 12, 4, 1, -1) + b"\x00" + b"\xff" * 8
    with pytest.raises(ProtocolError):
        decode_request(frame)


def test_uuid_fields_decode_to_uuid_objects() -> None:
    topic_id = uuid.uuid4()
    frame = encode_request(ApiKey.METADATA, 12, 1, None, {"topics": [{"topic_id": topic_id, "name": None}]})
    (topic,) = decode_request(frame).body.topics
    assert (topic.topic_id, topic.name) == (topic_id, None)
    assert decode_request(encode_request(ApiKey.METADATA, 12, 1, None, {"topics": [{}]})).body.topics[0].topic_id == ZERO_UUID


def _batch(payload_size: int) -> bytes:
    """A syntactically valid RecordBatch v2 shell (header + opaque payload) with a good CRC."""
    length = 49 + payload_size
    header = struct.pack(">qiibIhiqqqhii", 0, length, 0, 2, 0, 0, 0, 0, 0, -1, -1, -1, 1)
    batch = bytearray(header + b"\xab" * payload_size)
    struct.pack_into(">I", batch, 17, compute_crc(batch, 0, parse_header(batch, 0)))
    return bytes(batch)


def test_produce_records_decode_as_a_zero_copy_view_of_the_frame() -> None:
    records = _batch(1 << 20)
    body = {"acks": -1, "timeout_ms": 1000,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": records}]}]}
    frame = encode_request(ApiKey.PRODUCE, 9, 1, "p", body)
    decoded = decode_request(frame).body.topic_data[0].partition_data[0].records
    assert isinstance(decoded, memoryview)
    assert decoded.obj is frame  # a view into the frame, not a copy
    assert decoded == records
    assert [h.records_count for _, h in iter_batches(decoded)] == [1]


class FileRange:
    """Stand-in for a sendfile range: only a size, no bytes."""

    def __init__(self, size: int) -> None:
        self.size = size


def test_fetch_response_chunks_pass_opaque_records_through() -> None:
    file_range = FileRange(1 << 20)
    body = {"responses": [{"topic": "t", "partitions": [{"partition_index": 0, "high_watermark": 5, "records": file_range}]}]}
    chunks = encode_response_chunks(ApiKey.FETCH, 12, 3, body)
    assert any(c is file_range for c in chunks)
    assert chunks_size(chunks) == sum(len(c) for c in chunks if c is not file_range) + (1 << 20)
    with pytest.raises(ProtocolError):
        encode_response(ApiKey.FETCH, 12, 3, body)
    # Replacing the range with real bytes yields a frame that decodes to those bytes.
    records = _batch((1 << 20) - 61)
    frame = b"".join(records if c is file_range else c for c in chunks)
    _, decoded = decode_response(ApiKey.FETCH, 12, frame)
    assert decoded["responses"][0]["partitions"][0]["records"] == records


def test_fetch_response_with_1mib_records_embeds_the_bytes_unchanged() -> None:
    records = _batch(1 << 20)
    body = {"responses": [{"topic": "t", "partitions": [{"partition_index": 0, "records": records}]}]}
    chunks = encode_response_chunks(ApiKey.FETCH, 12, 3, body)
    assert any(c is records for c in chunks)  # the caller's object, not a copy
    frame = encode_response(ApiKey.FETCH, 12, 3, body)
    assert decode_response(ApiKey.FETCH, 12, frame)[1]["responses"][0]["partitions"][0]["records"] == records


def test_error_codes_follow_kafka() -> None:
    assert ErrorCode.NONE == 0 and ErrorCode.UNKNOWN_SERVER_ERROR == -1
    assert ErrorCode.OFFSET_OUT_OF_RANGE == 1 and ErrorCode.CORRUPT_MESSAGE == 2
    assert ErrorCode.UNKNOWN_TOPIC_OR_PARTITION == 3 and ErrorCode.UNSUPPORTED_VERSION == 35
    assert ErrorCode.NOT_CONTROLLER == 41 and ErrorCode.NOT_CONTROLLER.retriable
    assert not ErrorCode.TOPIC_ALREADY_EXISTS.retriable
    assert ErrorCode.from_code(30000) is ErrorCode.UNKNOWN_SERVER_ERROR
    error = KafkaError(6)
    assert error.code is ErrorCode.NOT_LEADER_OR_FOLLOWER and error.retriable
