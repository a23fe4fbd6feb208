"""`__transaction_state` records in Kafka's layout (key and value version 0)."""

from __future__ import annotations

import struct

import pytest

from broker.txn.metadata import TxnMetadata, TxnState
from broker.txn.records import (
    TxnRecordError,
    build_batch,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    iter_states,
)


def test_key_is_version_0_and_the_id_as_a_kafka_string():
    assert encode_key("txn") == b"\x00\x00\x00\x03txn"
    assert decode_key(encode_key("tx-é")) == "tx-é"


def test_value_layout_matches_kafkas_transaction_log_value_v0():
    m = TxnMetadata("t", 42, 3, 60_000, TxnState.ONGOING, frozenset({("a", 1), ("a", 0)}),
                    start_ms=1000, last_update_ms=2000)
    data = encode_value(m)
    version, pid, epoch, timeout, state, topics = struct.unpack_from(">hqhibi", data)
    assert (version, pid, epoch, timeout, state, topics) == (0, 42, 3, 60_000, 1, 1)
    assert data.endswith(struct.pack(">qq", 2000, 1000))
    assert decode_value("t", data) == m


def test_completed_transactions_are_written_without_partitions():
    m = TxnMetadata("t", 1, 0, 10, TxnState.COMPLETE_COMMIT, frozenset({("a", 0)}))
    assert decode_value("t", encode_value(m)).partitions == frozenset()


def test_unknown_versions_and_short_values_are_refused():
    with pytest.raises(TxnRecordError):
        decode_key(b"\x00\x01\x00\x01t")
    with pytest.raises(TxnRecordError):
        decode_value("t", b"\x00\x00\x00")


def test_replay_of_batches_yields_states_and_tombstones_in_order():
    first = TxnMetadata("a", 1, 0, 10, TxnState.EMPTY)
    second = TxnMetadata("b", 2, 0, 10, TxnState.PREPARE_COMMIT, frozenset({("x", 0)}))
    data = build_batch("a", first, 0) + build_batch("b", second, 0) + build_batch("a", None, 0)
    bad: list = []
    assert list(iter_states(data, lambda offset, error: bad.append(error))) == [
        ("a", first), ("b", second), ("a", None)]
    assert bad == []
