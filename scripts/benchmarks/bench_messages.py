"""Per-request cost of the protocol codec: prints one JSON line of microseconds per call.

    produce_decode_us            a Produce v9 request with 10 partitions (16 KiB batch each)
    fetch_encode_us              a Fetch v12 response with 10 partitions whose records are
                                 file ranges (encode_response_chunks, as the broker sends)
    metadata_request_decode_us   a Metadata v12 request naming 20 topics
    metadata_response_encode_us  a Metadata v12 response: 3 brokers, 20 topics x 3 partitions
    metadata_response_decode_us  the same response decoded (as a client does)

Where the codec has the generated message classes, each case is also measured the other way
(``*_typed_us``: decoding into, or encoding from, the classes; the plain figures are dicts).
Only the public codec API is used, so the same script measures an older checkout too. Figures
are CPU time per call (the time the process waits for a busy machine's cores does not count),
the best of several rounds with the cases interleaved.

    scripts/bench-codec --messages [--quick]
"""

from __future__ import annotations

import inspect
import json
import sys
import time
from typing import Any, Callable

from clients.protocol import (
    ApiKey,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    encode_response_chunks,
)

QUICK = "--quick" in sys.argv[1:]
ROUNDS = 3 if QUICK else 15
ROUND_SECONDS = 0.05 if QUICK else 0.25
TYPED = "typed" in inspect.signature(decode_request).parameters
PARTITIONS = 10
TOPICS = 20


class FileRange:
    """Stands in for a range of a log segment: only its size is read when encoding."""

    def __init__(self, size: int) -> None:
        self.size = size


def produce_request() -> bytes:
    batch = bytes(16384)
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [
        {"name": "events", "partition_data": [{"index": i, "records": batch}
                                              for i in range(PARTITIONS)]}]}
    return encode_request(ApiKey.PRODUCE, 9, 1, "bench", body)


def fetch_response() -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 7, "responses": [
        {"topic": "events", "partitions": [
            {"partition_index": i, "error_code": 0, "high_watermark": 1_000_000 + i,
             "last_stable_offset": 1_000_000 + i, "log_start_offset": 0,
             "aborted_transactions": None, "preferred_read_replica": -1,
             "records": FileRange(1 << 20)} for i in range(PARTITIONS)]}]}


def metadata_request() -> bytes:
    body = {"topics": [{"name": f"topic-{t}"} for t in range(TOPICS)],
            "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
    return encode_request(ApiKey.METADATA, 12, 1, "bench", body)


def metadata_response() -> dict[str, Any]:
    return {"throttle_time_ms": 0, "cluster_id": "cluster", "controller_id": 1, "brokers": [
        {"node_id": n, "host": f"broker-{n}.example", "port": 9092, "rack": None}
        for n in range(3)], "topics": [
        {"error_code": 0, "name": f"topic-{t}", "is_internal": False, "partitions": [
            {"error_code": 0, "partition_index": p, "leader_id": p % 3, "leader_epoch": 4,
             "replica_nodes": [0, 1, 2], "isr_nodes": [0, 1, 2], "offline_replicas": []}
            for p in range(3)], "topic_authorized_operations": -2147483648}
        for t in range(TOPICS)]}


def as_instance(api_key: int, version: int, body: dict[str, Any], request: bool) -> Any:
    """``body`` as the API's generated class (decoded from its own encoding)."""
    if request:
        return decode_request(encode_request(api_key, version, 1, "bench", body),
                              typed=True).body
    return decode_response(api_key, version, encode_response(api_key, version, 1, body),
                           typed=True)[1]


def cases() -> dict[str, Callable[[], object]]:
    produce, meta_request = produce_request(), metadata_request()
    fetch, meta = fetch_response(), metadata_response()
    meta_frame = encode_response(ApiKey.METADATA, 12, 1, meta)
    found: dict[str, Callable[[], object]] = {
        "produce_decode_us": lambda: decode_request(produce),
        "fetch_encode_us": lambda: encode_response_chunks(ApiKey.FETCH, 12, 1, fetch),
        "metadata_request_decode_us": lambda: decode_request(meta_request),
        "metadata_response_encode_us": lambda: encode_response(ApiKey.METADATA, 12, 1, meta),
        "metadata_response_decode_us": lambda: decode_response(ApiKey.METADATA, 12, meta_frame),
    }
    if TYPED:
        found.update({
            "produce_decode_us": lambda: decode_request(produce, typed=False),
            "metadata_request_decode_us": lambda: decode_request(meta_request, typed=False),
            "metadata_response_decode_us": lambda: decode_response(ApiKey.METADATA, 12,
                                                                   meta_frame, typed=False),
        })
        # Records become a real buffer to build the instance, then a file range again.
        fetch_typed = as_instance(ApiKey.FETCH, 12, {**fetch, "responses": [
            {**t, "partitions": [{**p, "records": b""} for p in t["partitions"]]}
            for t in fetch["responses"]]}, False)
        for topic in fetch_typed.responses:
            for partition in topic.partitions:
                partition.records = FileRange(1 << 20)
        meta_typed = as_instance(ApiKey.METADATA, 12, meta, False)
        found.update({
            "produce_decode_typed_us": lambda: decode_request(produce, typed=True),
            "fetch_encode_typed_us": lambda: encode_response_chunks(ApiKey.FETCH, 12, 1,
                                                                    fetch_typed),
            "metadata_request_decode_typed_us": lambda: decode_request(meta_request, typed=True),
            "metadata_response_encode_typed_us": lambda: encode_response(ApiKey.METADATA, 12, 1,
                                                                         meta_typed),
            "metadata_response_decode_typed_us": lambda: decode_response(
                ApiKey.METADATA, 12, meta_frame, typed=True),
        })
    return found


def measure(found: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Best CPU microseconds per call of each case over ROUNDS interleaved rounds."""
    best = {name: float("inf") for name in found}
    names = list(found)
    for number in range(ROUNDS):
        for name in names if number % 2 == 0 else reversed(names):
            fn = found[name]
            fn()  # compile the version's codec outside the timing
            calls, start = 0, time.thread_time()
            while (elapsed := time.thread_time() - start) < ROUND_SECONDS:
                fn()
                calls += 1
            best[name] = min(best[name], elapsed / calls * 1e6)
    return {name: round(us, 2) for name, us in best.items()}


if __name__ == "__main__":
    print(json.dumps({"typed_available": TYPED, **measure(cases())}))
