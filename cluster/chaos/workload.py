"""The workload of a chaos run, on trio with Raftka's own clients: idempotent acks=all
producers and a transactional one writing numbered records, a consumer group reading
read_committed and committing, and observers of the active controller and of the group's
committed offsets. Everything seen goes into a `WorkloadLog`, for the checker and report.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable

import trio

from cluster.chaos.checker import (
    Acknowledged,
    CommittedOffset,
    ControllerObservation,
    Read,
)
from clients.admin import Admin
from clients.consumer import Consumer
from clients.net import KafkaConnection
from clients.producer import open_producer
from clients.protocol import ApiKey
from metadata.topic_names import METADATA_TOPIC

logger = logging.getLogger(__name__)

GROUP = "chaos-readers"
IN_FLIGHT = 64               # unacknowledged records per producer
TXN_SIZE = 20                # records per transaction


@dataclass(frozen=True)
class Delivery:
    """When a record was sent and acknowledged (seconds on the run's clock)."""

    sent_s: float
    acked_s: float


@dataclass
class WorkloadLog:
    acknowledged: list[Acknowledged] = field(default_factory=list)
    deliveries: list[Delivery] = field(default_factory=list)
    aborted: list[bytes] = field(default_factory=list)
    failed_sends: int = 0
    reads: list[Read] = field(default_factory=list)
    committed_offsets: list[CommittedOffset] = field(default_factory=list)
    controllers: list[ControllerObservation] = field(default_factory=list)
    # (run seconds, active controller) for each observation, for the nemesis's targets.
    controller_seen: list[tuple[float, int]] = field(default_factory=list)
    # (run seconds, controller, epoch) as each node named it, asked every fifth of a second,
    # for the report's elections: the first sight of a new controller in a higher epoch.
    controller_views: list[tuple[float, int, int]] = field(default_factory=list)


@dataclass(frozen=True)
class WorkloadSettings:
    bootstrap: str
    topic: str
    partitions: int
    producers: int = 2
    rate_per_producer: float = 400.0       # records/s
    transactional: bool = True
    # host:port of each node's CONTROLLER listener: each answers DescribeQuorum from its
    # own view, so the election watch asks them (else the broker listeners, which forward).
    controllers: tuple[str, ...] = ()


class Workload:
    """Runs until `stop` is set; `clock()` gives the run's seconds."""

    def __init__(self, settings: WorkloadSettings, clock: Callable[[], float]) -> None:
        self.settings = settings
        self.clock = clock
        self.log = WorkloadLog()
        self.stop_writing = trio.Event()
        self.stop_reading = trio.Event()

    def _client(self, **extra: Any) -> dict[str, Any]:
        return {"bootstrap.servers": self.settings.bootstrap, **extra}

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            for n in range(self.settings.producers):
                nursery.start_soon(self._produce, f"p{n}")
            if self.settings.transactional:
                nursery.start_soon(self._produce_transactions, "t0")
            for n in range(2):
                nursery.start_soon(self._consume, f"c{n}")
            nursery.start_soon(self._observe, nursery.cancel_scope)
            for address in self.settings.controllers or self.settings.bootstrap.split(","):
                nursery.start_soon(self._watch_controller, address)

    async def _produce(self, name: str) -> None:
        config = self._client(acks="all", **{"enable.idempotence": True, "linger.ms": 2,
                                             "delivery.timeout.ms": 120_000,
                                             "client.id": f"chaos-{name}"})
        period = 1 / self.settings.rate_per_producer
        slots = trio.Semaphore(IN_FLIGHT)
        async with open_producer(config) as producer, trio.open_nursery() as waits:
            seq = 0
            next_at = trio.current_time()
            while not self.stop_writing.is_set():
                await slots.acquire()
                value = f"{name}-{seq:09d}".encode()
                partition = seq % self.settings.partitions
                try:
                    future = await producer.send(self.settings.topic, value,
                                                 partition=partition)
                except Exception as exc:       # metadata wait or buffer timeout: try on
                    logger.debug("send failed: %s", exc)
                    self.log.failed_sends += 1
                    slots.release()
                    continue
                waits.start_soon(self._await_ack, future, name, seq, value, self.clock(),
                                 slots)
                seq += 1
                next_at += period
                await trio.sleep_until(max(next_at, trio.current_time()))

    async def _await_ack(self, future: Any, producer: str, seq: int, value: bytes,
                         sent_s: float, slots: trio.Semaphore) -> None:
        try:
            metadata = await future
        except Exception:
            self.log.failed_sends += 1
        else:
            self.log.acknowledged.append(Acknowledged(
                (metadata.topic, metadata.partition), metadata.offset, value, producer, seq))
            self.log.deliveries.append(Delivery(sent_s, self.clock()))
        finally:
            slots.release()

    async def _produce_transactions(self, name: str) -> None:
        config = self._client(acks="all", **{"transactional.id": f"chaos-{name}",
                                             "transaction.timeout.ms": 30_000,
                                             "client.id": f"chaos-{name}"})
        seq = 0
        async with open_producer(config) as producer:
            await producer.init_transactions()
            while not self.stop_writing.is_set():
                sent: list[tuple[Any, int, bytes, float]] = []
                try:
                    await producer.begin_transaction()
                    for _ in range(TXN_SIZE):
                        value = f"{name}-{seq:09d}".encode()
                        future = await producer.send(self.settings.topic, value,
                                                     partition=seq % self.settings.partitions)
                        sent.append((future, seq, value, self.clock()))
                        seq += 1
                    await producer.commit_transaction()
                except Exception as exc:
                    logger.debug("transaction failed: %s", exc)
                    # Only an abort that succeeded says the records are not committed: a
                    # commit that timed out may have gone through.
                    if await self._abort(producer):
                        self.log.aborted.extend(value for _, _, value, _ in sent)
                    continue
                for future, number, value, sent_s in sent:
                    metadata = await future
                    self.log.acknowledged.append(Acknowledged(
                        (metadata.topic, metadata.partition), metadata.offset, value, name,
                        number))
                    self.log.deliveries.append(Delivery(sent_s, self.clock()))
                await trio.sleep(TXN_SIZE / self.settings.rate_per_producer)

    @staticmethod
    async def _abort(producer: Any) -> bool:
        try:
            await producer.abort_transaction()
            return True
        except Exception as exc:           # fenced or timed out: later rounds retry
            logger.debug("abort failed: %s", exc)
            await trio.sleep(1)
            return False

    async def _consume(self, name: str) -> None:
        config = self._client(**{"group.id": GROUP, "client.id": f"chaos-{name}",
                                 "isolation.level": "read_committed",
                                 "enable.auto.commit": False,
                                 "auto.offset.reset": "earliest"})
        while not self.stop_reading.is_set():
            try:
                async with Consumer(config) as consumer:
                    consumer.subscribe([self.settings.topic])
                    while not self.stop_reading.is_set():
                        records = await consumer.poll(500)
                        for r in records:
                            self.log.reads.append(Read((r.topic, r.partition), r.offset,
                                                       r.value or b""))
                        if records:
                            await consumer.commit()
            except Exception as exc:            # rebalanced or coordinator gone: rejoin
                logger.debug("consumer %s: %s", name, exc)
                await trio.sleep(0.5)

    async def _watch_controller(self, address: str) -> None:
        """Ask one node for the active controller every fifth of a second until reading
        stops. Each node on its own, so an election is seen as soon as any voter knows of
        it, whatever a cut-off node still answers."""
        host, _, port = address.rpartition(":")
        body = {"topics": [{"topic_name": METADATA_TOPIC,
                            "partitions": [{"partition_index": 0}]}]}
        conn: KafkaConnection | None = None
        while not self.stop_reading.is_set():
            with trio.move_on_after(1.0):
                try:
                    if conn is None or conn.closed:
                        conn = await KafkaConnection.connect(host, int(port), timeout=1.0,
                                                             client_id="chaos-watch")
                    response = await conn.request(ApiKey.DESCRIBE_QUORUM, body, timeout=1.0)
                    partition = response["topics"][0]["partitions"][0]
                    if partition["error_code"] == 0 and partition["leader_id"] >= 0:
                        self.log.controller_views.append(
                            (self.clock(), partition["leader_id"], partition["leader_epoch"]))
                except Exception as exc:     # a node away or mid-election: ask again
                    logger.debug("controller watch %s: %s", address, exc)
                    if conn is not None:
                        await conn.aclose()
                    conn = None
            await trio.sleep(0.2)
        if conn is not None:
            await conn.aclose()

    async def _observe(self, scope: trio.CancelScope) -> None:
        """Every half second: the active controller and its epoch, and the group's
        committed offsets. Ends the run once reading has stopped."""
        while not self.stop_reading.is_set():
            try:
                async with Admin(self._client(**{"request.timeout.ms": 2000})) as admin:
                    while not self.stop_reading.is_set():
                        quorum = await admin.describe_quorum()
                        if quorum.leader_id >= 0:
                            self.log.controllers.append(ControllerObservation(
                                quorum.leader_epoch, quorum.leader_id))
                            self.log.controller_seen.append((self.clock(), quorum.leader_id))
                        offsets = await admin.list_group_offsets(GROUP)
                        for tp, offset in sorted(offsets.items()):
                            self.log.committed_offsets.append(
                                CommittedOffset(GROUP, tp, offset))
                        await trio.sleep(0.5)
            except Exception as exc:
                logger.debug("observer: %s", exc)
                await trio.sleep(0.5)
        scope.cancel()
