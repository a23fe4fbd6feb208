"""Hostile and careless clients against one node started by the launcher (the code path of
scripts/bootstrap-quorum), driven with raw sockets and frames that clients refuse to send.

For each case: the offending connection is closed (or held back) as specified; meanwhile
another client, on a connection opened before the case, gets every answer within 2 s; the
node's resident memory (VmRSS) stays under the case's bound; and the records acknowledged
before the case are all still readable after it. The last cases stop nodes of their own with
SIGTERM while their event loop is held by a huge request.

With RAFTKA_HOSTILE_REPORT=<file>, each case appends its figures (peak RSS over the node's
RSS before the case, the other client's slowest answer) to that file as JSON lines.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import threading
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Callable, Iterator

import pytest

from cluster.launcher import start_node
from cluster.launcher.layout import NodeInfo
from cluster.launcher.processes import exit_code, is_running, read_pid
from cluster.testing.waiting import wait_for
from clients.protocol import ApiKey, decode_response, encode_request
from clients.protocol.errors import ErrorCode
from tests.compat.cluster import HOST, Cluster, running_cluster
from tests.unit.broker.apis.batches import batch, fetch_body, produce_body, values_of

MAX_REQUEST_BYTES = 104857600  # socket.request.max.bytes, Kafka's default
POOL_BYTES = MAX_REQUEST_BYTES  # queued.max.request.bytes at its smallest allowed value
READ_TIMEOUT_S = 3.0
QUEUED_MAX_REQUESTS = 40
MAX_CONNECTIONS = 140
PER_IP = 4
# 127.0.0.1 (every client but the floods) may open many; 127.0.0.3 a few more than PER_IP.
OVERRIDDEN_ADDRESS, OVERRIDE = "127.0.0.3", 6
OVERRIDES = f"127.0.0.1:200,{OVERRIDDEN_ADDRESS}:{OVERRIDE}"
SHUTDOWN_TIMEOUT_S = 3.0
ANSWER_BOUND_S = 2.0
MB = 1 << 20

NODE_CONFIG = {
    "raftka.socket.request.read.timeout.ms": str(int(READ_TIMEOUT_S * 1000)),
    "queued.max.requests": str(QUEUED_MAX_REQUESTS),
    "queued.max.request.bytes": str(POOL_BYTES),
    "max.connections": str(MAX_CONNECTIONS),
    "max.connections.per.ip": str(PER_IP),
    "max.connections.per.ip.overrides": OVERRIDES,
    "raftka.shutdown.timeout.ms": str(int(SHUTDOWN_TIMEOUT_S * 1000)),
    "auto.create.topics.enable": "false",
}
DURABLE = "durable"
DURABLE_VALUES = [b"acknowledged-%d" % i for i in range(200)]


# -- raw frames ---------------------------------------------------------------------------

def connect(port: int, source: str = HOST, timeout: float = 10.0) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    sock.bind((source, 0))
    sock.connect((HOST, port))
    return sock


def frame_of(api_key: int, version: int, correlation_id: int, body: dict) -> bytes:
    payload = encode_request(api_key, version, correlation_id, "hostile-tests", body)
    return struct.pack(">i", len(payload)) + payload


API_VERSIONS = frame_of(ApiKey.API_VERSIONS, 0, 1, {})


def read_frame(sock: socket.socket) -> bytes | None:
    """The next response frame; None when the node closed the connection."""
    header = _read(sock, 4)
    return None if header is None else _read(sock, struct.unpack(">i", header)[0])


def _read(sock: socket.socket, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        try:
            chunk = sock.recv(min(size - len(data), 1 << 20))
        except (ConnectionResetError, BrokenPipeError):
            return None
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def closed_by_node(sock: socket.socket, timeout: float) -> bool:
    """Whether the node closes `sock` within `timeout` (it sends nothing meanwhile)."""
    readable, _, _ = select.select([sock], [], [], timeout)
    if not readable:
        return False
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def answered(sock: socket.socket, timeout: float) -> bool:
    """Whether an answer arrives on `sock` within `timeout` (False when it is closed)."""
    readable, _, _ = select.select([sock], [], [], timeout)
    return bool(readable) and read_frame(sock) is not None


def answering(socks: list[socket.socket], within: float,
              enough: int | None = None) -> list[socket.socket]:
    """The sockets of `socks` answered within `within` seconds in all (or once `enough`
    have been); each must carry a response, not a close."""
    answered_: list[socket.socket] = []
    deadline = time.monotonic() + within
    while (left := deadline - time.monotonic()) > 0 and len(answered_) < (enough or len(socks)):
        waiting = [sock for sock in socks if sock not in answered_]
        for sock in select.select(waiting, [], [], left)[0]:
            assert read_frame(sock) is not None, "the node closed a connection it had accepted"
            answered_.append(sock)
    return answered_


# -- what every case checks ------------------------------------------------------------------

def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


class Watch:
    """During a case: another client asks the node for ApiVersions over and over on a
    connection opened before the case, timing each answer, while the node's VmRSS is
    sampled."""

    def __init__(self, port: int, pid: int) -> None:
        self.pid = pid
        self.sock = connect(port)
        self.rss_before = rss_mb(pid)
        self.rss_peak = self.rss_before
        self.slowest = 0.0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._ask, daemon=True),
                         threading.Thread(target=self._sample, daemon=True)]

    def _ask(self) -> None:
        correlation = 0
        while not self._stop.is_set():
            correlation += 1
            started = time.monotonic()
            try:
                self.sock.sendall(frame_of(ApiKey.API_VERSIONS, 0, correlation, {}))
                frame = read_frame(self.sock)
            except OSError as exc:
                self.failures.append(f"the other client's connection failed: {exc}")
                return
            if frame is None:
                self.failures.append("the node closed the other client's connection")
                return
            self.slowest = max(self.slowest, time.monotonic() - started)
            self._stop.wait(0.05)

    def _sample(self) -> None:
        while not self._stop.is_set():
            try:
                self.rss_peak = max(self.rss_peak, rss_mb(self.pid))
            except OSError:
                return
            self._stop.wait(0.02)

    def __enter__(self) -> "Watch":
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)
        self.sock.close()

    @property
    def growth_mb(self) -> float:
        return self.rss_peak - self.rss_before


class Node:
    """The module's node, and the checks around each case."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.info = cluster.info.nodes[0]
        pid = read_pid(self.info)
        assert pid is not None
        self.pid = pid

    @property
    def port(self) -> int:
        return self.cluster.port

    def log(self) -> str:
        return self.info.log_path.read_text(errors="replace")

    @contextmanager
    def case(self, name: str, rss_bound_mb: float) -> Iterator[Watch]:
        """Run a case under watch; then check the other client, the RSS bound and the
        acknowledged records."""
        with Watch(self.port, self.pid) as watch:
            try:
                yield watch
            finally:
                report(name, watch)
        assert not watch.failures, watch.failures
        assert watch.slowest < ANSWER_BOUND_S, (
            f"the other client waited {watch.slowest:.2f} s for an answer")
        assert watch.growth_mb < rss_bound_mb, (
            f"VmRSS grew by {watch.growth_mb:.0f} MB (bound {rss_bound_mb} MB)")
        assert read_durable(self.cluster) == DURABLE_VALUES


def report(name: str, watch: Watch) -> None:
    path = os.environ.get("RAFTKA_HOSTILE_REPORT")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps({"case": name, "rss_before_mb": round(watch.rss_before),
                                  "rss_peak_mb": round(watch.rss_peak),
                                  "slowest_answer_s": round(watch.slowest, 3)}) + "\n")


def read_durable(cluster: Cluster) -> list[bytes]:
    response = cluster.request(ApiKey.FETCH, fetch_body(DURABLE, 0, partition_max_bytes=MB))
    partition = response["responses"][0]["partitions"][0]
    assert partition["error_code"] == ErrorCode.NONE
    return [value for _, value in values_of(partition["records"] or b"")]


def produce_durable(cluster: Cluster) -> None:
    cluster.create_topic(DURABLE, partitions=1, replication_factor=1)
    for start in range(0, len(DURABLE_VALUES), 50):
        response = cluster.request(ApiKey.PRODUCE, produce_body(
            DURABLE, batch(DURABLE_VALUES[start:start + 50]), acks=-1))
        entry = response["responses"][0]["partition_responses"][0]
        assert entry["error_code"] == ErrorCode.NONE


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    with running_cluster(tmp_path_factory.mktemp("hostile"), nodes=1,
                         overrides=NODE_CONFIG) as cluster:
        produce_durable(cluster)
        yield Node(cluster)


def threads(target: Callable[[int], None], count: int) -> list[threading.Thread]:
    started = [threading.Thread(target=target, args=(i,), daemon=True) for i in range(count)]
    for thread in started:
        thread.start()
    return started


# -- the cases -------------------------------------------------------------------------------

def test_oversized_length_prefix_closes_that_connection_before_allocating(node: Node) -> None:
    with node.case("oversized prefix", rss_bound_mb=16):
        for size in (MAX_REQUEST_BYTES + 1, 2**31 - 1):
            with connect(node.port) as hostile:
                local_port = hostile.getsockname()[1]
                hostile.sendall(struct.pack(">i", size) + b"\0" * 64)
                assert closed_by_node(hostile, timeout=ANSWER_BOUND_S)
            wait_for(lambda: f"{HOST}:{local_port}" in node.log()
                     and "exceeds socket.request.max.bytes" in node.log(),
                     "the close to be logged with the peer", timeout=5)


def test_announced_large_frames_pin_only_what_arrived_and_time_out(node: Node) -> None:
    """50 connections announce 100 MB each and send a byte at a time: the node holds about
    what arrived, and closes each once the read timeout has run from its first byte,
    however the bytes keep trickling."""
    count = 50
    with node.case("50 x 100 MB announced, trickled", rss_bound_mb=24):
        with ExitStack() as stack:
            socks = [stack.enter_context(connect(node.port)) for _ in range(count)]
            started = time.monotonic()
            for sock in socks:
                sock.sendall(struct.pack(">i", 100 * MB) + b"\1")
            open_ = list(socks)
            closed_after: list[float] = []
            while open_ and time.monotonic() - started < READ_TIMEOUT_S + 5:
                for sock in list(open_):
                    try:
                        sock.sendall(b"\1")  # a byte trickles in on each, every 0.25 s
                    except OSError:
                        pass
                readable, _, _ = select.select(open_, [], [], 0.25)
                for sock in readable:
                    if closed_by_node(sock, 0):
                        closed_after.append(time.monotonic() - started)
                        open_.remove(sock)
            assert not open_, f"{len(open_)} trickling connections were never closed"
            assert min(closed_after) >= READ_TIMEOUT_S * 0.9
            assert max(closed_after) <= READ_TIMEOUT_S + 3
    assert "raftka.socket.request.read.timeout.ms" in node.log()


def test_half_request_then_stall_is_closed_after_the_read_timeout(node: Node) -> None:
    """Slow-loris: half a request, then a byte now and then; a connection that sends
    nothing at all is left to connections.max.idle.ms."""
    with node.case("slow-loris half requests", rss_bound_mb=16):
        with ExitStack() as stack:
            lorises = [stack.enter_context(connect(node.port)) for _ in range(5)]
            silent = stack.enter_context(connect(node.port))
            started = time.monotonic()
            for sock in lorises:
                sock.sendall(struct.pack(">i", 1000) + b"\0" * 10)
            closed_after: list[float] = []
            open_ = list(lorises)
            while open_ and time.monotonic() - started < READ_TIMEOUT_S + 5:
                for sock in open_:
                    try:
                        sock.sendall(b"\0")
                    except OSError:
                        pass
                for sock in list(open_):
                    if closed_by_node(sock, 0.05):
                        closed_after.append(time.monotonic() - started)
                        open_.remove(sock)
                time.sleep(0.4)
            assert not open_, "a stalled half request was never closed"
            assert READ_TIMEOUT_S * 0.9 <= min(closed_after)
            assert max(closed_after) <= READ_TIMEOUT_S + 3
            assert not closed_by_node(silent, 0.1), "a silent connection fell to the read timeout"
            silent.sendall(API_VERSIONS)
            assert answered(silent, ANSWER_BOUND_S)


def test_connection_flood_past_max_connections_is_held_back(node: Node) -> None:
    """Beyond max.connections new connections wait unaccepted (they are neither served nor
    closed) and are served as soon as others close."""
    flood = MAX_CONNECTIONS + 6
    with node.case("connection flood past max.connections", rss_bound_mb=48):
        with ExitStack() as stack:
            socks = []
            for i in range(flood):  # PER_IP connections from each of many addresses
                source = f"127.0.1.{10 + i // PER_IP}"
                sock = stack.enter_context(connect(node.port, source))
                sock.sendall(API_VERSIONS)
                socks.append(sock)
            served = answering(socks, within=1.0)
            held = [sock for sock in socks if sock not in served]
            assert len(held) >= 6, f"only {len(held)} of {flood} connections were held back"
            assert len(served) <= MAX_CONNECTIONS - 1  # the other client holds one
            assert not any(closed_by_node(sock, 0) for sock in held), (
                "a connection beyond max.connections was closed instead of held back")
            for sock in served[:3]:
                sock.close()
            now_served = answering(held, within=ANSWER_BOUND_S, enough=3)
            assert len(now_served) >= 3, "held-back connections were not served once others closed"
    assert "max.connections" in node.log()


def test_connections_per_ip_and_its_override(node: Node) -> None:
    """max.connections.per.ip closes what an address opens beyond it; an override gives one
    address its own limit."""
    with node.case("per-ip limit and override", rss_bound_mb=16):
        for source, limit in (("127.0.0.2", PER_IP), (OVERRIDDEN_ADDRESS, OVERRIDE)):
            with ExitStack() as stack:
                socks = [stack.enter_context(connect(node.port, source))
                         for _ in range(limit + 2)]
                for sock in socks:
                    try:
                        sock.sendall(API_VERSIONS)
                    except OSError:
                        pass
                results = [answered(sock, ANSWER_BOUND_S) for sock in socks]
                assert results == [True] * limit + [False] * 2, (source, results)
                assert all(closed_by_node(sock, 1.0) for sock in socks[limit:])
    assert "max.connections.per.ip" in node.log()


def test_queued_max_request_bytes_exhausted_by_concurrent_large_produces(node: Node) -> None:
    """Far more large produce frames at once than queued.max.request.bytes holds, each
    handled slowly (an fsync per append, off the event loop, so the node could read on):
    reading waits for memory instead of buffering it, every producer is answered, and every
    acknowledged record is in the log."""
    topic, partitions, producers = "bulk", 4, 96
    node.cluster.create_topic(topic, partitions=partitions, replication_factor=1,
                              configs={"flush.messages": "1"})
    records = batch([b"x" * 1000] * 1000)  # about 1 MB, one batch per partition
    frame = frame_of(ApiKey.PRODUCE, 7, 1, {
        "acks": 1, "timeout_ms": 30000, "transactional_id": None,
        "topic_data": [{"name": topic, "partition_data": [
            {"index": p, "records": records} for p in range(partitions)]}]})
    acknowledged = [0] * producers
    errors: list[str] = []
    ready = threading.Barrier(producers)

    def produce(i: int) -> None:
        try:
            with connect(node.port, timeout=60) as sock:
                ready.wait()
                sock.sendall(frame)
                answer = read_frame(sock)
            assert answer is not None, "connection closed"
            _, body = decode_response(ApiKey.PRODUCE, 7, answer)
            codes = [p["error_code"] for t in body["responses"]
                     for p in t["partition_responses"]]
            assert codes == [0] * partitions, codes
            acknowledged[i] = partitions * 1000
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(f"producer {i}: {exc!r}")

    frame_mb = len(frame) / MB
    # The pool, the one frame it lets past it, one frame's worth of decoding and answering,
    # and some slack; the frames sent at once are far more.
    bound = POOL_BYTES / MB + 2 * frame_mb + 48
    assert producers * frame_mb > 2 * bound
    with node.case("queued.max.request.bytes exhaustion", rss_bound_mb=bound):
        for thread in threads(produce, producers):
            thread.join(timeout=120)
    assert not errors, errors
    offsets = node.cluster.request(ApiKey.LIST_OFFSETS, {
        "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
            {"partition_index": p, "current_leader_epoch": -1, "timestamp": -1}
            for p in range(partitions)]}]})
    ends = sum(p["offset"] for t in offsets["topics"] for p in t["partitions"])
    assert ends == sum(acknowledged) == producers * partitions * 1000


def test_long_polling_consumers_do_not_hold_the_request_backlog(node: Node) -> None:
    """Many more long-poll fetches than queued.max.requests: parked, they give their place
    back, and the other client is still answered at once."""
    topic, connections, pipelined = "quiet", 20, 5
    node.cluster.create_topic(topic, partitions=1, replication_factor=1)
    fetches = [frame_of(ApiKey.FETCH, 11, i, fetch_body(topic, 0, max_wait_ms=4000))
               for i in range(pipelined)]
    answers = [0] * connections
    sent = [threading.Event() for _ in range(connections)]

    def long_poll(i: int) -> None:
        with connect(node.port, timeout=30) as sock:
            sock.sendall(b"".join(fetches))
            sent[i].set()
            answers[i] = sum(1 for _ in range(pipelined) if read_frame(sock) is not None)

    assert connections * pipelined > QUEUED_MAX_REQUESTS
    with node.case("long-polling consumers", rss_bound_mb=24):
        pollers = threads(long_poll, connections)
        # The other client keeps asking while every long poll is parked (for 4 s each).
        assert all(event.wait(30) for event in sent)
        for thread in pollers:
            thread.join(timeout=30)
    assert answers == [pipelined] * connections


# -- stopping a busy node --------------------------------------------------------------------

STARVED = "starved"


def starving_produce(partitions: int = 1000, records: int = 3000) -> bytes:
    """One Produce of a batch of `records` keyed records to partition 0 of a compacted topic,
    named `partitions` times over: the log checks 3,000,000 keys, seconds of work (which the
    node interleaves with its other connections, a megabyte of batches at a time)."""
    batched = batch([b"starving"] * records)
    return frame_of(ApiKey.PRODUCE, 7, 1, {
        "acks": 1, "timeout_ms": 30000, "transactional_id": None,
        "topic_data": [{"name": STARVED, "partition_data": [
            {"index": 0, "records": batched} for _ in range(partitions)]}]})


@contextmanager
def busy_node(tmp_path_factory: pytest.TempPathFactory, name: str
              ) -> Iterator[tuple[Cluster, int]]:
    """A node of its own with records acknowledged, busy with a huge request and
    flooded by clients."""
    with running_cluster(tmp_path_factory.mktemp(name), nodes=1,
                         overrides=NODE_CONFIG) as cluster:
        produce_durable(cluster)
        cluster.create_topic(STARVED, partitions=1, replication_factor=1,
                             configs={"cleanup.policy": "compact"})
        info = cluster.info.nodes[0]
        pid = read_pid(info)
        assert pid is not None
        stop = threading.Event()

        def flood(i: int) -> None:
            while not stop.is_set():
                try:
                    with connect(cluster.port, timeout=2) as sock:
                        sock.sendall(API_VERSIONS * 20)
                        while read_frame(sock) is not None and not stop.is_set():
                            pass
                except OSError:
                    stop.wait(0.05)

        flooders = threads(flood, 8)
        with connect(cluster.port, timeout=60) as huge:
            huge.sendall(starving_produce())
            # The node is at work on the request once its appends have started (it decodes
            # the frame in a worker thread first).
            wait_for(lambda: starved_bytes(info) > 0, "the huge request's appends to start",
                     timeout=60, interval=0.02)
            try:
                yield cluster, pid
            finally:
                stop.set()
                for thread in flooders:
                    thread.join(timeout=10)


def starved_bytes(info: NodeInfo) -> int:
    """Bytes in the log of the partition the huge request appends to."""
    return sum(path.stat().st_size for path in info.dir.rglob(f"{STARVED}-0/*.log"))


def wait_exit(info: object, pid: int, timeout: float) -> float:
    started = time.monotonic()
    wait_for(lambda: not is_running(pid), "the node to exit", timeout=timeout)
    return time.monotonic() - started


def test_sigterm_while_busy_stops_within_the_shutdown_timeout(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    with busy_node(tmp_path_factory, "busy-sigterm") as (cluster, pid):
        info = cluster.info.nodes[0]
        os.kill(pid, signal.SIGTERM)
        took = wait_exit(info, pid, timeout=SHUTDOWN_TIMEOUT_S + 20)
        report_stop("SIGTERM while busy", took)
        assert took <= SHUTDOWN_TIMEOUT_S + 1.5, f"the stop took {took:.1f} s"
        assert exit_code(pid) == 0
        # No request holds the event loop any more (a large one lets the others run); a loop
        # that is held, and the deadline that ends it, are
        # tests/unit/broker/cli/test_stop_signals.py's.
        assert "stopping gracefully" in info.log_path.read_text(errors="replace")
        # Everything acknowledged before the stop is there after a restart.
        start_node(cluster.info.dir, info.node_id)
        assert read_durable(cluster) == DURABLE_VALUES


def test_second_sigterm_ends_a_busy_node_at_once(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    with busy_node(tmp_path_factory, "second-sigterm") as (cluster, pid):
        info = cluster.info.nodes[0]
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: "stopping gracefully" in info.log_path.read_text(errors="replace"),
                 "the first SIGTERM to be taken", timeout=10, interval=0.02)
        os.kill(pid, signal.SIGTERM)
        took = wait_exit(info, pid, timeout=20)
        report_stop("second SIGTERM while busy", took)
        assert took <= 1.0, f"the second SIGTERM took {took:.1f} s to end the node"
        assert exit_code(pid) == 1
        assert "second signal SIGTERM" in info.log_path.read_text(errors="replace")


def report_stop(name: str, took: float) -> None:
    path = os.environ.get("RAFTKA_HOSTILE_REPORT")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps({"case": name, "exit_after_s": round(took, 2)}) + "\n")
