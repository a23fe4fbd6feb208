"""Kafka's two leader-epoch failure cases (KIP-101), staged deterministically.

Two in-process brokers, each the real BrokerServer (ReplicaManager, replica fetchers, Fetch
handler) over its own log directory and a real socket; the test plays the controller by
committing the metadata records the controller would. "Crash and restart" closes a broker
and opens a new one over the same directory, so its log is recovered from disk. Both
scenarios must end with byte-identical logs at identical offsets.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Callable, Mapping

import trio

from broker.config import ServerConfig
from broker.log.partition_log import PartitionLog
from broker.log.results import UpperBound
from broker.server import BrokerServer
from metadata.delta import apply_records
from metadata.image import MetadataImage
from metadata.records import (
    BrokerEndpoint,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from clients.records.header import iter_batches
from tests.unit.broker.log.helpers import batch, records_of

TOPIC = "epochs"
TOPIC_ID = uuid.uuid4()
WAIT_S = 10.0


async def wait_until(condition: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    """Poll `condition` until it holds; fail naming `what` after `timeout` seconds."""
    with trio.move_on_after(timeout):
        while not condition():
            await trio.sleep(0.005)
        return
    raise AssertionError(f"timed out waiting for {what}")


class Broker:
    """One broker on 127.0.0.1 (no controller); `start`/`stop` like a process would."""

    def __init__(self, broker_id: int, directory: Path, extra: Mapping[str, str]) -> None:
        self.broker_id = broker_id
        self.directory = directory
        self.extra = dict(extra)
        self.server: BrokerServer | None = None
        self.image = MetadataImage.empty()
        self.port = 0
        self._scope: trio.CancelScope | None = None
        self._stopped = trio.Event()

    async def start(self, nursery: trio.Nursery) -> None:
        props = {"process.roles": "broker", "node.id": str(self.broker_id),
                 "controller.quorum.voters": "9@127.0.0.1:1",
                 "listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(self.directory),
                 **self.extra}
        config = ServerConfig(props)
        self.server = BrokerServer(config, "epochs-test-cluster", lambda: self.image)
        self.image = MetadataImage.empty()
        self._stopped = trio.Event()
        self.port = await nursery.start(self._serve, self.server)

    async def _serve(self, server: BrokerServer, *,
                     task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            with trio.CancelScope() as self._scope:
                async with trio.open_nursery() as nursery:
                    addresses = await nursery.start(server.run, trio.Event())
                    task_status.started(addresses["PLAINTEXT"][1])
        finally:
            self._stopped.set()

    async def stop(self) -> None:
        assert self._scope is not None
        self._scope.cancel()
        await self._stopped.wait()
        self.server = None

    @property
    def running(self) -> bool:
        return self.server is not None

    def publish(self, records: list[Any]) -> None:
        assert self.server is not None
        delta, self.image = apply_records(self.image, records)
        self.server.replica_manager.on_metadata_update(delta, self.image)

    def partition(self):  # type: ignore[no-untyped-def]
        assert self.server is not None
        partition = self.server.replica_manager.get_partition(TOPIC, 0)
        assert partition is not None
        return partition

    @property
    def log(self) -> PartitionLog:
        log: PartitionLog = self.partition().log
        return log

    def append(self, *values: bytes) -> None:
        """An acks=1 produce on the leader."""
        self.partition().append_as_leader(batch(list(values)), 1)
        self.server.replica_manager.notify((TOPIC, 0))  # type: ignore[union-attr]

    def log_bytes(self) -> bytes:
        """Every batch of the log, across segments."""
        log, offset, chunks = self.log, 0, []
        while offset < log.log_end_offset:
            chunk = log.read_bytes(offset, 1 << 20, UpperBound.LEO)
            assert chunk, f"no data at offset {offset}"
            chunks.append(chunk)
            offset = max(h.next_offset for _, h in iter_batches(chunk, verify_crc=True))
        return b"".join(chunks)


class Controller:
    """The test's stand-in for the quorum: committed records, delivered to running brokers."""

    def __init__(self, brokers: dict[int, Broker]) -> None:
        self.brokers = brokers
        self.records: list[Any] = []
        self._epochs = iter(range(1, 1000))

    def commit(self, *records: Any) -> None:
        self.records.extend(records)
        for broker in self.brokers.values():
            if broker.running:
                broker.publish(list(records))

    async def start(self, nursery: trio.Nursery, broker_id: int) -> None:
        """Start a broker, replay the metadata so far to it, and register its address."""
        broker = self.brokers[broker_id]
        await broker.start(nursery)
        broker.publish(list(self.records))
        self.commit(RegisterBrokerRecord(
            broker_id=broker_id, incarnation_id=uuid.uuid4(), broker_epoch=next(self._epochs),
            end_points=(BrokerEndpoint("PLAINTEXT", "127.0.0.1", broker.port, 0),),
            fenced=False))

    def elect(self, leader: int, isr: tuple[int, ...]) -> None:
        self.commit(PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, leader=leader,
                                          isr=isr))


async def two_brokers(nursery: trio.Nursery, tmp_path: Path,
                      follower_extra: Mapping[str, str] | None = None) -> Controller:
    brokers = {1: Broker(1, tmp_path / "b1", {}), 2: Broker(2, tmp_path / "b2",
                                                           follower_extra or {})}
    controller = Controller(brokers)
    for broker_id in brokers:
        await controller.start(nursery, broker_id)
    controller.commit(TopicRecord(name=TOPIC, topic_id=TOPIC_ID),
                      PartitionRecord(partition_id=0, topic_id=TOPIC_ID, replicas=(1, 2),
                                      isr=(1, 2), leader=1, leader_epoch=0, partition_epoch=0))
    return controller


def assert_identical(a: Broker, b: Broker, values: list[bytes]) -> None:
    assert a.log.log_end_offset == b.log.log_end_offset == len(values)
    assert a.log_bytes() == b.log_bytes()
    assert [(o, v) for o, _, v in records_of(a.log_bytes())] == list(enumerate(values))
    assert a.log.epoch_cache.entries == b.log.epoch_cache.entries


async def test_data_loss_case_keeps_records_past_the_high_watermark(tmp_path: Path) -> None:
    """KIP-101 case 1: a follower restarts holding m2 above its HW; it must not truncate to
    the HW, so when it then leads, the old leader returns to an identical log."""
    async with trio.open_nursery() as nursery:
        # A long follower poll keeps B from learning the HW that its own fetch moved.
        controller = await two_brokers(nursery, tmp_path, {"replica.fetch.wait.max.ms": "30000"})
        a, b = controller.brokers[1], controller.brokers[2]
        a.append(b"m1")
        await wait_until(lambda: b.log.log_end_offset == 1 and a.log.high_watermark == 1,
                         "m1 replicated")
        a.append(b"m2")
        await wait_until(lambda: b.log.log_end_offset == 2 and a.log.high_watermark == 2,
                         "m2 replicated and acknowledged")
        assert b.log.high_watermark == 1
        await b.stop()
        await controller.start(nursery, 2)
        assert b.log.log_end_offset == 2, "the restarted follower truncated to its HW"
        await a.stop()
        controller.elect(leader=2, isr=(2,))
        assert b.partition().is_leader and b.partition().leader_epoch == 1
        b.append(b"m3")
        await controller.start(nursery, 1)
        await wait_until(lambda: a.log.log_end_offset == 3, "the old leader to catch up")
        assert_identical(a, b, [b"m1", b"m2", b"m3"])
        assert b.log.epoch_cache.entries == [(0, 0), (1, 2)]
        nursery.cancel_scope.cancel()


async def test_divergence_case_truncates_the_old_leader_at_the_divergence_point(
        tmp_path: Path) -> None:
    """KIP-101 case 2: the old leader holds an uncommitted m2 where the new leader wrote m3
    in a later epoch; it must find the divergence point, drop m2 and take m3."""
    async with trio.open_nursery() as nursery:
        controller = await two_brokers(nursery, tmp_path)
        a, b = controller.brokers[1], controller.brokers[2]
        a.append(b"m1")
        await wait_until(lambda: b.log.log_end_offset == 1 and a.log.high_watermark == 1,
                         "m1 replicated")
        await b.stop()
        a.append(b"m2")  # acks=1: only the leader has it
        await a.stop()
        await controller.start(nursery, 2)
        controller.elect(leader=2, isr=(2,))
        assert b.log.log_end_offset == 1
        b.append(b"m3")
        await controller.start(nursery, 1)
        assert a.log.log_end_offset == 2  # recovered with the diverging m2
        await wait_until(lambda: a.log.log_end_offset == 2 and a.log_bytes() == b.log_bytes(),
                         "the old leader to truncate and catch up")
        assert_identical(a, b, [b"m1", b"m3"])
        assert a.log.epoch_cache.entries == [(0, 0), (1, 1)]
        nursery.cancel_scope.cancel()


async def test_follower_drops_an_empty_epoch_it_led_and_catches_up(tmp_path: Path) -> None:
    """A broker that led an epoch without writing in it holds an epoch entry at its LEO; as a
    follower it must drop that entry (not loop on the divergence) and take the leader's data."""
    async with trio.open_nursery() as nursery:
        controller = await two_brokers(nursery, tmp_path)
        a, b = controller.brokers[1], controller.brokers[2]
        a.append(b"m1")
        await wait_until(lambda: b.log.log_end_offset == 1, "m1 replicated")
        await b.stop()
        a.append(b"m2")
        await controller.start(nursery, 2)
        controller.elect(leader=2, isr=(1, 2))   # B leads epoch 1 briefly, writing nothing
        assert b.log.epoch_cache.entries == [(0, 0), (1, 1)]
        controller.elect(leader=1, isr=(1, 2))   # A leads epoch 2 from its LEO 2
        await wait_until(lambda: b.log.log_end_offset == 2, "B to take m2")
        assert b.log.epoch_cache.entries == [(0, 0)]
        a.append(b"m3")
        await wait_until(lambda: b.log.log_end_offset == 3, "B to take m3")
        assert_identical(a, b, [b"m1", b"m2", b"m3"])
        assert b.log.epoch_cache.entries == [(0, 0), (2, 2)]
        nursery.cancel_scope.cancel()
