"""A throwaway Kafka-speaking loopback server for client compatibility tests.

It answers with frames built by our codec and records every request frame it receives.
Blocking client libraries force threads here: one accept thread and one per connection,
all stopped through an Event and joined with a deadline.
"""

from __future__ import annotations

import socket
import struct
import threading
from dataclasses import dataclass, field
from typing import Any

from clients.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    ErrorCode,
    ProtocolError,
    Request,
    UnsupportedVersionError,
    decode_request,
    encode_response,
)
from clients.protocol.messages.api_versions import ApiVersionsResponseData
from clients.protocol.messages.fetch import FetchRequestData
from clients.records.header import compute_crc, parse_header
from clients.varint import encode_unsigned_varint, encode_varint, encode_varlong

TOPIC = "golden"
FETCH_KEY = b"fetched-key"
FETCH_VALUE = b"fetched-value"


def record_batch(key: bytes, value: bytes, base_offset: int = 0) -> bytes:
    """One uncompressed RecordBatch v2 holding a single record."""
    body = (
        b"\x00" + encode_varlong(0) + encode_varint(0)
        + encode_varint(len(key)) + key + encode_varint(len(value)) + value + encode_varint(0)
    )
    record = encode_varint(len(body)) + body
    batch_length = 49 + len(record)
    header = struct.pack(
        ">qiibIhiqqqhii", base_offset, batch_length, 0, 2, 0, 0, 0, 0, 0, -1, -1, -1, 1
    )
    batch = bytearray(header + record)
    struct.pack_into(">I", batch, 17, compute_crc(batch, 0, parse_header(batch, 0)))
    return bytes(batch)


@dataclass
class Captured:
    request: Request
    frame: bytes


@dataclass
class GoldenServer:
    """Serves one fake broker (node 0) on 127.0.0.1; ``captured`` holds decoded requests."""

    sock: socket.socket = field(default_factory=lambda: socket.create_server(("127.0.0.1", 0)))
    stop: threading.Event = field(default_factory=threading.Event)
    captured: list[Captured] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    threads: list[threading.Thread] = field(default_factory=list)

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    def start(self) -> None:
        self.sock.settimeout(0.1)
        self._spawn(self._accept_loop)

    def close(self, deadline_s: float = 5.0) -> None:
        self.stop.set()
        for thread in list(self.threads):
            thread.join(deadline_s)
        self.sock.close()
        alive = [t for t in self.threads if t.is_alive()]
        assert not alive, f"server threads did not stop: {alive}"

    def requests(self, api_key: ApiKey, client_id: str) -> list[Captured]:
        with self.lock:
            return [c for c in self.captured
                    if c.request.api_key == api_key and c.request.client_id == client_id]

    def _spawn(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self.threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            conn.settimeout(0.1)
            self._spawn(self._serve, conn)

    def _read_exact(self, conn: socket.socket, n: int) -> bytes | None:
        data = bytearray()
        while len(data) < n:
            if self.stop.is_set():
                return None
            try:
                chunk = conn.recv(n - len(data))
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return None
            if not chunk:
                return None
            data += chunk
        return bytes(data)

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                size = self._read_exact(conn, 4)
                if size is None:
                    return
                frame = self._read_exact(conn, struct.unpack(">i", size)[0])
                if frame is None:
                    return
                response = self._answer(frame)
                if response is not None:
                    try:
                        conn.sendall(struct.pack(">i", len(response)) + response)
                    except OSError:
                        return

    def _answer(self, frame: bytes) -> bytes | None:
        try:
            request = decode_request(frame)
        except UnsupportedVersionError as exc:
            if exc.api_key != ApiKey.API_VERSIONS:
                raise
            # Kafka answers an unknown ApiVersions version with v0 and its own ranges.
            return encode_response(ApiKey.API_VERSIONS, 0, exc.correlation_id,
                                   ApiVersionsResponseData(error_code=ErrorCode.UNSUPPORTED_VERSION,
                                                           api_keys=_api_keys()))
        except ProtocolError:
            return None
        with self.lock:
            self.captured.append(Captured(request, frame))
        body = self._body(request)
        if body is None:
            return None
        return encode_response(request.api_key, request.api_version, request.correlation_id, body)

    def _body(self, request: Request) -> dict[str, Any] | ApiVersionsResponseData | None:
        key, body = request.api_key, request.body
        if key == ApiKey.API_VERSIONS:
            return ApiVersionsResponseData(api_keys=_api_keys())
        if key == ApiKey.METADATA:
            # null (or, in v0, empty) asks for every topic; from v1 empty asks for none.
            topics = body.topics
            if topics is None or (not topics and request.api_version == 0):
                names = [TOPIC]
            else:
                names = [t.name for t in topics]
            return {
                "brokers": [{"node_id": 0, "host": "127.0.0.1", "port": self.port}],
                "cluster_id": "golden-cluster", "controller_id": 0,
                "topics": [{"name": name, "partitions": [
                    {"partition_index": 0, "leader_id": 0, "leader_epoch": 0,
                     "replica_nodes": [0], "isr_nodes": [0]}]} for name in names],
            }
        if key == ApiKey.PRODUCE:
            if body.acks == 0:
                return None
            return {"responses": [
                {"name": t.name, "partition_responses": [
                    {"index": p.index, "base_offset": 0} for p in t.partition_data]}
                for t in body.topic_data]}
        if key == ApiKey.FETCH:
            return self._fetch(body)
        if key == ApiKey.FIND_COORDINATOR:
            node = {"node_id": 0, "host": "127.0.0.1", "port": self.port}
            if request.api_version < 4:
                return node
            return {"coordinators": [{"key": k, **node} for k in body.coordinator_keys]}
        if key == ApiKey.INIT_PRODUCER_ID:
            return {"producer_id": 1000, "producer_epoch": 0}
        return {}

    def _fetch(self, body: FetchRequestData) -> dict[str, Any]:
        responses = []
        for topic in body.topics:
            partitions = []
            for p in topic.partitions:
                has_data = p.fetch_offset == 0
                partitions.append({
                    "partition_index": p.partition, "high_watermark": 1,
                    "last_stable_offset": 1, "log_start_offset": 0,
                    "records": record_batch(FETCH_KEY, FETCH_VALUE) if has_data else b"",
                })
            responses.append({"topic": topic.topic, "partitions": partitions})
        if not any(p["records"] for r in responses for p in r["partitions"]):
            # Stand in for the broker's long poll so idle consumers do not spin.
            self.stop.wait(min(body.max_wait_ms, 100) / 1000)
        return {"responses": responses}


def _api_keys() -> list[ApiVersionsResponseData.ApiVersion]:
    return [ApiVersionsResponseData.ApiVersion(api_key=int(k), min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(SUPPORTED_VERSIONS.items())]
