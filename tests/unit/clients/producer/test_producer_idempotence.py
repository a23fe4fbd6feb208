"""The idempotent producer (the default, as in Kafka since 3.0) against stub brokers that
check sequences as a broker does: producer ids, per-partition sequences, ordered retries with
several batches in flight, and the epoch bump of KIP-360."""

from __future__ import annotations

import pytest
import trio

from clients.consumer import parse_fetched_records
from clients.producer import BlockingProducer, ConfigError, ProducerConfig, open_producer
from clients.producer.idempotence import IdempotenceState, stamp_producer_state
from clients.protocol import ApiKey, ErrorCode, KafkaError
from clients.records.batch import decode_batch
from clients.records.builder import BatchBuilder
from clients.records.header import iter_batches
from tests.unit.clients.net.test_blocking_connection import in_thread
from tests.unit.clients.stub_cluster import StubCluster

BOOT = {"bootstrap.servers": "h:1"}


def log_values(cluster: StubCluster, topic: str, partition: int) -> list[bytes | None]:
    parsed = parse_fetched_records(topic, partition, cluster.log(topic, partition), 0)
    return [r.value for r in parsed.records]


def log_headers(cluster: StubCluster, topic: str, partition: int) -> list[tuple[int, int, int]]:
    """(producer id, epoch, base sequence) of each stored batch."""
    return [(h.producer_id, h.producer_epoch, h.base_sequence)
            for _, h in iter_batches(cluster.log(topic, partition))]


# -- configuration ---------------------------------------------------------------------

def test_idempotence_is_the_default() -> None:
    config = ProducerConfig.from_mapping(BOOT)
    assert config.enable_idempotence and config.acks == -1


@pytest.mark.parametrize("setting", [{"acks": "1"}, {"acks": "0"}, {"retries": "0"},
                                     {"max.in.flight.requests.per.connection": "6"}])
def test_a_conflicting_setting_turns_the_default_off(setting: dict[str, str]) -> None:
    assert not ProducerConfig.from_mapping({**BOOT, **setting}).enable_idempotence


@pytest.mark.parametrize("setting, named", [({"acks": "1"}, "acks must be all"),
                                            ({"retries": "0"}, "retries"),
                                            ({"max.in.flight.requests.per.connection": "6"},
                                             "max.in.flight")])
def test_an_explicit_enable_idempotence_with_a_conflict_is_a_config_error(
        setting: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=f"enable.idempotence=true.*{named}"):
        ProducerConfig.from_mapping({**BOOT, "enable.idempotence": "true", **setting})


def test_transactional_id_needs_idempotence() -> None:
    with pytest.raises(ConfigError, match="transactional.id"):
        ProducerConfig.from_mapping({**BOOT, "transactional.id": "t", "enable.idempotence":
                                     "false"})
    with pytest.raises(ConfigError, match="transactional.id.*acks"):
        ProducerConfig.from_mapping({**BOOT, "transactional.id": "t", "acks": "1"})
    config = ProducerConfig.from_mapping({**BOOT, "transactional.id": "t",
                                          "transaction.timeout.ms": "9000"})
    assert config.enable_idempotence and config.transactional_id == "t"
    assert config.transaction_timeout_ms == 9000


# -- pure state --------------------------------------------------------------------------

def test_stamping_rewrites_producer_fields_and_keeps_a_valid_crc() -> None:
    builder = BatchBuilder()
    for i in range(3):
        builder.append(1000 + i, None, f"v{i}".encode())
    stamped = stamp_producer_state(builder.build(), 77, 3, 40, transactional=True)
    batch = decode_batch(stamped, verify_crc=True)
    header = batch.header
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (77, 3, 40)
    assert header.is_transactional and header.last_sequence == 42
    assert [r.value for r in batch.records] == [b"v0", b"v1", b"v2"]


def test_sequences_continue_per_partition_and_restart_after_a_bump() -> None:
    state = IdempotenceState()
    state.set_identity(5, 0)
    raw = BatchBuilder()
    raw.append(1, None, b"x")
    data = raw.build()
    _, first = state.stamp(("t", 0), data, 3, None)
    _, second = state.stamp(("t", 0), data, 2, None)
    _, other = state.stamp(("t", 1), data, 1, None)
    assert (first, second, other) == ((5, 0, 0), (5, 0, 3), (5, 0, 0))
    assert state.stamp(("t", 0), data, 2, second)[1] == second   # a retry keeps its sequence
    state.acknowledged(("t", 0), first, 3)
    assert state.is_next_sequence(("t", 0), second)
    assert state.bump_epoch_locally()
    assert state.stamp(("t", 0), data, 2, second)[1] == (5, 1, 0)


def test_an_exhausted_epoch_asks_for_a_new_producer_id() -> None:
    state = IdempotenceState()
    state.set_identity(5, 32766)
    assert not state.bump_epoch_locally()
    assert not state.has_id


# -- against stub brokers -----------------------------------------------------------------

async def test_batches_carry_the_producer_id_and_consecutive_sequences(
        nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    async with open_producer(bootstrap_servers=cluster.bootstrap, linger_ms=0,
                             batch_size=200) as p:
        futures = [await p.send("t", b"v%03d" % i, partition=0) for i in range(60)]
        await p.flush()
    assert all(f.succeeded() for f in futures)
    assert len(cluster.brokers[1].requests(ApiKey.INIT_PRODUCER_ID)) == 1
    headers = log_headers(cluster, "t", 0)
    assert len(headers) > 3
    assert {(pid, epoch) for pid, epoch, _ in headers} == {(1001, 0)}
    counts = [h.records_count for _, h in iter_batches(cluster.log("t", 0))]
    assert [seq for _, _, seq in headers] == [sum(counts[:i]) for i in range(len(counts))]
    assert log_values(cluster, "t", 0) == [b"v%03d" % i for i in range(60)]


async def test_a_retried_batch_keeps_its_place_with_others_in_flight(
        nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    seen: list[int] = []

    def fail_first(node_id: int, request: object) -> None:
        seen.append(1)
        if len(seen) == 1:
            # The first batch is refused; the ones behind it then find a sequence gap.
            cluster.produce_errors.append(ErrorCode.NOT_ENOUGH_REPLICAS)

    cluster.on_produce = fail_first
    async with open_producer(bootstrap_servers=cluster.bootstrap, linger_ms=0, batch_size=100,
                             retry_backoff_ms=5) as p:
        futures = [await p.send("t", b"r%03d" % i, partition=0) for i in range(40)]
        await p.flush()
    assert all(f.succeeded() for f in futures)
    assert log_values(cluster, "t", 0) == [b"r%03d" % i for i in range(40)]
    offsets = [f.result().offset for f in futures]
    assert offsets == list(range(40))
    assert len(seen) > len(log_headers(cluster, "t", 0))      # something was retried
    assert {(pid, epoch) for pid, epoch, _ in log_headers(cluster, "t", 0)} == {(1001, 0)}


async def test_several_batches_of_one_partition_are_in_flight_at_once(
        nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    gate = trio.Event()

    async def slow_produce(request: object) -> object:
        await gate.wait()
        return cluster._produce(1, request)  # type: ignore[arg-type]

    cluster.brokers[1].handlers[ApiKey.PRODUCE] = slow_produce
    async with open_producer(bootstrap_servers=cluster.bootstrap, linger_ms=0,
                             batch_size=100) as p:
        futures = [await p.send("t", b"p%03d" % i, partition=0) for i in range(30)]
        accumulator = p._core.accumulator
        with trio.fail_after(5):
            while accumulator.in_flight_count() < 5:
                await trio.sleep(0.01)
        await trio.sleep(0.05)
        assert accumulator.in_flight_count() == 5   # max.in.flight.requests.per.connection
        gate.set()
        await p.flush()
    assert all(f.succeeded() for f in futures)
    assert log_values(cluster, "t", 0) == [b"p%03d" % i for i in range(30)]


@pytest.mark.parametrize("error", [ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                   ErrorCode.UNKNOWN_PRODUCER_ID])
async def test_a_lost_producer_state_bumps_the_epoch_and_restarts_sequences(
        nursery: trio.Nursery, error: ErrorCode) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1, 1])
    async with open_producer(bootstrap_servers=cluster.bootstrap, linger_ms=0) as p:
        await p.send_and_wait("t", b"a", partition=0)
        await p.send_and_wait("t", b"b", partition=1)
        cluster.produce_errors.append(error)
        with trio.fail_after(10):
            await p.send_and_wait("t", b"c", partition=0)
            await p.send_and_wait("t", b"d", partition=1)
    assert log_values(cluster, "t", 0) == [b"a", b"c"]
    assert log_headers(cluster, "t", 0) == [(1001, 0, 0), (1001, 1, 0)]
    assert log_headers(cluster, "t", 1) == [(1001, 0, 0), (1001, 1, 0)]
    assert len(cluster.brokers[1].requests(ApiKey.INIT_PRODUCER_ID)) == 1


async def test_the_blocking_producer_is_idempotent_too(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    cluster.produce_errors.extend([ErrorCode.NOT_ENOUGH_REPLICAS])

    def run() -> None:
        with BlockingProducer(bootstrap_servers=cluster.bootstrap, linger_ms=0,
                              retry_backoff_ms=5) as p:
            for i in range(5):
                p.send("t", b"b%d" % i, partition=0)
            p.flush()

    await in_thread(run)
    assert log_values(cluster, "t", 0) == [b"b%d" % i for i in range(5)]
    assert {pid for pid, _, _ in log_headers(cluster, "t", 0)} == {1001}


async def test_without_producer_ids_an_implicit_default_sends_plainly(
        nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.add_topic("t", leaders=[1])
    del cluster.brokers[1].handlers[ApiKey.INIT_PRODUCER_ID]
    del cluster.brokers[1].versions[ApiKey.INIT_PRODUCER_ID]
    async with open_producer(bootstrap_servers=cluster.bootstrap, linger_ms=0) as p:
        with trio.fail_after(10):
            await p.send_and_wait("t", b"plain", partition=0)
    assert log_headers(cluster, "t", 0) == [(-1, -1, -1)]


async def test_transactional_requests_give_up_after_max_block_ms(nursery: trio.Nursery) -> None:
    cluster = await StubCluster().start(nursery, 1)
    cluster.brokers[1].handlers[ApiKey.FIND_COORDINATOR] = lambda request: {
        "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE, "node_id": -1, "host": "",
        "port": -1}
    config = {"bootstrap.servers": cluster.bootstrap, "transactional.id": "t",
              "max.block.ms": 300, "retry.backoff.ms": 20}
    async with open_producer(config) as p:
        with trio.fail_after(10), pytest.raises(KafkaError) as raised:
            await p.init_transactions()
    assert raised.value.code == ErrorCode.REQUEST_TIMED_OUT
    assert "max.block.ms" in str(raised.value)

    def blocking() -> KafkaError:
        with BlockingProducer(config) as producer, pytest.raises(KafkaError) as failed:
            producer.init_transactions()
        return failed.value

    assert (await in_thread(blocking)).code == ErrorCode.REQUEST_TIMED_OUT
