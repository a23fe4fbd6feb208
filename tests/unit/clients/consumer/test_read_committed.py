"""isolation.level on Raftka's consumer: the config, and read_committed's client-side drop
of aborted transactions' batches and of control batches (as Kafka's fetcher does)."""

from __future__ import annotations

from clients.consumer import ConsumerConfig, parse_fetched_records
from clients.records.batch import Record, encode_batch
from clients.records.control import ABORT, COMMIT, encode_end_txn_batch


def data(offset: int, values: list[bytes], producer_id: int = -1,
         transactional: bool = False) -> bytes:
    records = [Record(offset + i, 1000, None, v) for i, v in enumerate(values)]
    return encode_batch(records, base_offset=offset, producer_id=producer_id,
                        producer_epoch=0 if producer_id >= 0 else -1,
                        base_sequence=0 if producer_id >= 0 else -1,
                        is_transactional=transactional)


def marker(offset: int, kind: int, producer_id: int) -> bytes:
    return encode_end_txn_batch(kind, producer_id=producer_id, producer_epoch=0,
                                coordinator_epoch=0, timestamp=1000, base_offset=offset)


# Producer 7 commits (offsets 0-1, marker 4), producer 8 aborts (2-3 and 5, marker 6),
# then plain records and a new transaction of producer 8 that commits (8, marker 9).
LOG = b"".join([
    data(0, [b"c0", b"c1"], 7, True),
    data(2, [b"a2", b"a3"], 8, True),
    marker(4, COMMIT, 7),
    data(5, [b"a5"], 8, True),
    marker(6, ABORT, 8),
    data(7, [b"plain7"]),
    data(8, [b"c8"], 8, True),
    marker(9, COMMIT, 8),
])
ABORTED = [{"producer_id": 8, "first_offset": 2}]


def test_the_default_is_read_uncommitted_and_read_committed_is_fetch_isolation_1() -> None:
    assert ConsumerConfig.from_mapping(bootstrap_servers="h:1").isolation_level == 0
    config = ConsumerConfig.from_mapping(bootstrap_servers="h:1",
                                         isolation_level="read_committed")
    assert config.isolation_level == 1


def test_read_uncommitted_sees_every_data_record_and_no_marker() -> None:
    parsed = parse_fetched_records("t", 0, LOG, 0)
    assert [r.value for r in parsed.records] == [b"c0", b"c1", b"a2", b"a3", b"a5",
                                                 b"plain7", b"c8"]
    assert parsed.next_offset == 10


def test_read_committed_drops_the_aborted_transaction_only() -> None:
    parsed = parse_fetched_records("t", 0, LOG, 0, aborted=ABORTED)
    assert [(r.offset, r.value) for r in parsed.records] == [
        (0, b"c0"), (1, b"c1"), (7, b"plain7"), (8, b"c8")]
    assert parsed.next_offset == 10


def test_an_aborted_transaction_that_began_before_the_fetch_offset_is_still_dropped() -> None:
    tail = LOG[len(data(0, [b"c0", b"c1"], 7, True)) + len(data(2, [b"a2", b"a3"], 8, True)):]
    parsed = parse_fetched_records("t", 0, tail, 4, aborted=ABORTED)
    assert [r.value for r in parsed.records] == [b"plain7", b"c8"]


def test_without_aborted_transactions_read_committed_keeps_transactional_data() -> None:
    parsed = parse_fetched_records("t", 0, LOG, 0, aborted=[])
    assert [r.value for r in parsed.records] == [b"c0", b"c1", b"a2", b"a3", b"a5",
                                                 b"plain7", b"c8"]
