"""DescribeTransactions and ListTransactions entries from the coordinator's state. Pure."""

from __future__ import annotations

from typing import Iterable

from broker.txn.metadata import TxnEntry, TxnState
from clients.protocol import ErrorCode
from clients.protocol.messages.describe_transactions import DescribeTransactionsResponseData
from clients.protocol.messages.list_transactions import ListTransactionsResponseData

Described = DescribeTransactionsResponseData.TransactionState
Listed = ListTransactionsResponseData.TransactionState


def describe(transactional_id: str, entry: TxnEntry | None, code: int) -> Described:
    """One DescribeTransactions entry; `code` is the coordinator's error for the id."""
    if entry is None:
        return Described(error_code=code or ErrorCode.TRANSACTIONAL_ID_NOT_FOUND,
                         transactional_id=transactional_id, transaction_start_time_ms=-1,
                         producer_id=-1, producer_epoch=-1)
    m = entry.metadata
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(m.partitions):
        by_topic.setdefault(topic, []).append(partition)
    return Described(
        error_code=0, transactional_id=transactional_id,
        transaction_state=m.state.display_name, transaction_timeout_ms=m.timeout_ms,
        transaction_start_time_ms=m.start_ms, producer_id=m.producer_id,
        producer_epoch=m.producer_epoch,
        topics=[DescribeTransactionsResponseData.TopicData(topic=t, partitions=ps)
                for t, ps in by_topic.items()])


def list_transactions(entries: Iterable[tuple[str, TxnEntry]], states: list[str],
                      producer_ids: list[int], duration_ms: int, now_ms: int
                      ) -> tuple[list[str], list[Listed]]:
    """(the state filters no state has, the matching ListTransactions entries). A duration
    filter (v1) keeps the transactions open at least that long."""
    unknown = [s for s in states if TxnState.from_name(s) is None]
    wanted = {state for s in states if (state := TxnState.from_name(s)) is not None}
    pids = set(producer_ids)
    found = []
    for transactional_id, entry in entries:
        m = entry.metadata
        if wanted and m.state not in wanted:
            continue
        if pids and m.producer_id not in pids:
            continue
        if duration_ms >= 0 and not (m.state is TxnState.ONGOING
                                     and now_ms - m.start_ms >= duration_ms):
            continue
        found.append(Listed(transactional_id=transactional_id, producer_id=m.producer_id,
                            transaction_state=m.state.display_name))
    return unknown, found
