"""DescribeTransactions and ListTransactions entries."""

from __future__ import annotations

from broker.txn import views
from broker.txn.metadata import TxnEntry, TxnMetadata, TxnState
from clients.protocol import ErrorCode
from clients.protocol.messages.describe_transactions import DescribeTransactionsResponseData

TopicData = DescribeTransactionsResponseData.TopicData

ENTRIES = [
    ("a", TxnEntry(TxnMetadata("a", 1, 0, 1000, TxnState.ONGOING,
                               frozenset({("t", 1), ("t", 0), ("u", 2)}), start_ms=100))),
    ("b", TxnEntry(TxnMetadata("b", 2, 3, 1000, TxnState.COMPLETE_COMMIT))),
]


def test_describe_groups_partitions_by_topic_and_reports_unknown_ids():
    entry = views.describe("a", ENTRIES[0][1], 0)
    assert entry.transaction_state == "Ongoing"
    assert entry.topics == [TopicData(topic="t", partitions=[0, 1]),
                            TopicData(topic="u", partitions=[2])]
    assert views.describe("x", None, 0).error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    assert views.describe("x", None, ErrorCode.NOT_COORDINATOR).error_code == \
        ErrorCode.NOT_COORDINATOR


def test_list_filters_by_state_producer_and_duration():
    def ids(*args):
        unknown, found = views.list_transactions(ENTRIES, *args)
        return unknown, [f.transactional_id for f in found]

    assert ids([], [], -1, 0) == ([], ["a", "b"])
    assert ids(["CompleteCommit", "Nope"], [], -1, 0) == (["Nope"], ["b"])
    assert ids([], [1], -1, 0) == ([], ["a"])
    assert ids([], [], 500, 599) == ([], [])
    assert ids([], [], 500, 600) == ([], ["a"])
