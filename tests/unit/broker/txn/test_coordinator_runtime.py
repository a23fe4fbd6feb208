"""The coordinator runtime over an in-memory `__transaction_state`: a partition is loaded
when this broker leads it, a transaction left prepared there is finished (markers, then
Complete), and every transition is in the log before it is answered."""

from __future__ import annotations

import uuid
from typing import Iterator

import trio

from broker.coordinator.log import CoordinatorLogError
from broker.txn.coordinator import TransactionCoordinator, TransactionSettings
from broker.txn.metadata import TxnMetadata, TxnState
from broker.txn.records import build_batch, iter_states
from broker.txn.state_manager import TransactionStateManager
from broker.txn.state_topic import TRANSACTION_STATE_TOPIC
from clients.protocol import ErrorCode
from metadata.delta import apply_records
from metadata.image import MetadataImage
from metadata.records import PartitionRecord, TopicRecord

BROKER = 1


class MemoryLog:
    """`CoordinatorLog` of one partition in memory; `fail_with` refuses appends."""

    def __init__(self) -> None:
        self.batches: list[bytes] = []
        self.fail_with: int | None = None

    async def append(self, partition: int, batch: bytes) -> int:
        if self.fail_with is not None:
            raise CoordinatorLogError(self.fail_with)
        self.batches.append(batch)
        return len(self.batches) - 1

    def read_from(self, partition: int, offset: int) -> Iterator[bytes]:
        yield b"".join(self.batches)

    def log_start_offset(self, partition: int) -> int:
        return 0

    def states(self) -> list[tuple[str, TxnState | None]]:
        return [(t, None if m is None else m.state)
                for t, m in iter_states(b"".join(self.batches), lambda o, e: None)]


class RecordingMarkers:
    def __init__(self) -> None:
        self.sent: list[tuple[int, int, bool, int, frozenset]] = []
        self.release = trio.Event()

    async def send(self, producer_id, epoch, commit, coordinator_epoch, partitions) -> None:
        await self.release.wait()
        self.sent.append((producer_id, epoch, commit, coordinator_epoch, partitions))


class FixedIds:
    def __init__(self) -> None:
        self.next = 1000

    async def generate(self) -> int:
        self.next += 1
        return self.next


def led_image(leader_epoch: int = 4) -> MetadataImage:
    topic_id = uuid.uuid4()
    _, image = apply_records(MetadataImage.empty(), [
        TopicRecord(name=TRANSACTION_STATE_TOPIC, topic_id=topic_id),
        PartitionRecord(partition_id=0, topic_id=topic_id, replicas=(BROKER,), isr=(BROKER,),
                        leader=BROKER, leader_epoch=leader_epoch, partition_epoch=0)])
    return image


def coordinator(log: MemoryLog, markers: RecordingMarkers, image: MetadataImage
                ) -> TransactionCoordinator:
    state = TransactionStateManager(BROKER, 1, log, clock=lambda: 5000)
    return TransactionCoordinator(BROKER, TransactionSettings(), state, markers,  # type: ignore[arg-type]
                                  FixedIds(), image=lambda: image, clock=lambda: 5000)  # type: ignore[arg-type]


async def wait_until(predicate, timeout: float = 5.0) -> None:
    with trio.fail_after(timeout):
        while not predicate():
            await trio.sleep(0.01)


async def test_a_transaction_left_prepared_is_finished_by_the_new_coordinator():
    log = MemoryLog()
    prepared = TxnMetadata("t", 7, 2, 60_000, TxnState.PREPARE_COMMIT,
                           frozenset({("out", 0), ("out", 1)}), start_ms=1, last_update_ms=2)
    log.batches.append(build_batch("t", prepared, 0))
    markers = RecordingMarkers()
    coord = coordinator(log, markers, led_image(leader_epoch=4))
    async with trio.open_nursery() as nursery:
        await nursery.start(coord.run)
        await wait_until(lambda: coord.state.coordinator_error("t") == 0)
        # Still prepared until every marker is written: the producer is asked to wait.
        assert await coord.end_transaction("t", 7, 2, True) == ErrorCode.CONCURRENT_TRANSACTIONS
        markers.release.set()
        await wait_until(lambda: coord.describe("t").transaction_state == "CompleteCommit")
        assert markers.sent == [(7, 2, True, 4, frozenset({("out", 0), ("out", 1)}))]
        assert log.states()[-1] == ("t", TxnState.COMPLETE_COMMIT)
        assert await coord.end_transaction("t", 7, 2, True) == 0  # a retry
        nursery.cancel_scope.cancel()


async def test_transitions_are_written_before_they_are_answered():
    log = MemoryLog()
    markers = RecordingMarkers()
    markers.release.set()
    coord = coordinator(log, markers, led_image())
    async with trio.open_nursery() as nursery:
        await nursery.start(coord.run)
        await wait_until(lambda: coord.state.coordinator_error("t") == 0)
        code, pid, epoch = await coord.init_producer_id("t", 60_000, None)
        assert (code, pid, epoch) == (0, 1001, 0)
        assert log.states() == [("t", TxnState.EMPTY)]
        assert await coord.add_partitions("t", pid, 0, [("out", 0)]) == 0
        assert log.states()[-1] == ("t", TxnState.ONGOING)
        # A failed write is not the state: the client hears why and the state stays.
        log.fail_with = ErrorCode.NOT_ENOUGH_REPLICAS
        assert await coord.end_transaction("t", pid, 0, True) == \
            ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert coord.describe("t").transaction_state == "Ongoing"
        log.fail_with = None
        # A second producer fences the first: the epoch is bumped and the transaction
        # aborted with it; the new producer retries until the abort is complete.
        code, _, _ = await coord.init_producer_id("t", 60_000, None)
        assert code == ErrorCode.CONCURRENT_TRANSACTIONS
        await wait_until(lambda: coord.describe("t").transaction_state == "CompleteAbort")
        assert markers.sent == [(pid, 1, False, 4, frozenset({("out", 0)}))]
        assert await coord.add_partitions("t", pid, 0, [("out", 1)]) == ErrorCode.PRODUCER_FENCED
        assert await coord.init_producer_id("t", 60_000, None) == (0, pid, 2)
        nursery.cancel_scope.cancel()


async def test_loading_and_losing_leadership():
    log = MemoryLog()
    markers = RecordingMarkers()
    image = led_image()
    coord = coordinator(log, markers, MetadataImage.empty())
    assert coord.state.coordinator_error("t") == ErrorCode.NOT_COORDINATOR
    async with trio.open_nursery() as nursery:
        await nursery.start(coord.run)
        await coord.on_metadata(None, image)  # type: ignore[arg-type]
        await wait_until(lambda: coord.state.coordinator_error("t") == 0)
        await coord.on_metadata(None, MetadataImage.empty())  # type: ignore[arg-type]
        assert coord.state.coordinator_error("t") == ErrorCode.NOT_COORDINATOR
        assert await coord.init_producer_id("t", 60_000, None) == (
            ErrorCode.NOT_COORDINATOR, -1, -1)
        nursery.cancel_scope.cancel()


async def test_timed_out_transactions_are_aborted_and_idle_ids_expire():
    log = MemoryLog()
    markers = RecordingMarkers()
    markers.release.set()
    now = [5000]
    state = TransactionStateManager(BROKER, 1, log, clock=lambda: now[0])
    coord = TransactionCoordinator(
        BROKER, TransactionSettings(id_expiration_ms=10_000), state, markers,  # type: ignore[arg-type]
        FixedIds(), image=lambda: led_image(), clock=lambda: now[0])  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        await nursery.start(coord.run)
        await wait_until(lambda: coord.state.coordinator_error("t") == 0)
        _, pid, _ = await coord.init_producer_id("t", 1000, None)
        await coord.add_partitions("t", pid, 0, [("out", 0)])
        now[0] += 1000
        await coord.abort_timed_out()
        assert coord.describe("t").transaction_state == "Ongoing"  # not past it yet
        now[0] += 1
        await coord.abort_timed_out()
        await wait_until(lambda: coord.describe("t").transaction_state == "CompleteAbort")
        assert coord.describe("t").producer_epoch == 1  # the idle producer is fenced
        await coord.expire_ids()
        assert coord.describe("t").error_code == 0
        now[0] += 10_000
        await coord.expire_ids()
        assert coord.describe("t").error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        assert log.states()[-1] == ("t", None)  # a tombstone
        nursery.cancel_scope.cancel()


async def test_requests_while_loading_hear_coordinator_load_in_progress():
    log = MemoryLog()
    readable = [False]
    read_from = log.read_from

    def gated(partition: int, offset: int) -> Iterator[bytes]:
        if not readable[0]:  # the replica cannot be read yet
            raise CoordinatorLogError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return read_from(partition, offset)

    log.read_from = gated  # type: ignore[method-assign]
    markers = RecordingMarkers()
    coord = coordinator(log, markers, led_image())
    async with trio.open_nursery() as nursery:
        await nursery.start(coord.run)
        assert coord.state.coordinator_error("t") == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert (await coord.init_producer_id("t", 60_000, None))[0] == \
            ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert coord.describe("t").error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        readable[0] = True
        await wait_until(lambda: coord.state.coordinator_error("t") == 0)
        assert (await coord.init_producer_id("t", 60_000, None))[0] == 0
        nursery.cancel_scope.cancel()
