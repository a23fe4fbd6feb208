"""Each transactional API's error body encodes at every supported version and puts the code
where that version's clients read it."""

from __future__ import annotations

import pytest

from broker.apis.transactions import (
    TRANSACTION_ERRORS,
    fenced_for_version,
    txn_offset_commit_code,
)
from clients.protocol import SUPPORTED_VERSIONS, ApiKey, ErrorCode, as_message
from clients.protocol.codec import decode_response, encode_response

REQUESTS = {
    ApiKey.ADD_PARTITIONS_TO_TXN: {
        "v3_and_below_topics": [{"name": "t", "partitions": [0, 1]}],
        "transactions": [{"transactional_id": "x", "topics": [{"name": "t", "partitions": [0]}]}]},
    ApiKey.ADD_OFFSETS_TO_TXN: {},
    ApiKey.END_TXN: {},
    ApiKey.TXN_OFFSET_COMMIT: {"topics": [{"name": "t", "partitions": [{"partition_index": 3}]}]},
    ApiKey.DESCRIBE_TRANSACTIONS: {"transactional_ids": ["a", "b"]},
    ApiKey.LIST_TRANSACTIONS: {},
}


def request_at(api_key: ApiKey, version: int) -> dict:
    """REQUESTS[api_key] without the fields `version` lacks (AddPartitionsToTxn changed
    form at v4)."""
    body = dict(REQUESTS[api_key])
    if api_key == ApiKey.ADD_PARTITIONS_TO_TXN:
        body.pop("transactions" if version < 4 else "v3_and_below_topics")
    return body


def codes(body: object) -> list[int]:
    """Every error code in a decoded body."""
    found: list[int] = []
    if isinstance(body, dict):
        for key, value in body.items():
            if key.endswith("error_code"):
                found.append(value)
            else:
                found.extend(codes(value))
    elif isinstance(body, list):
        for item in body:
            found.extend(codes(item))
    return found


@pytest.mark.parametrize(("api_key", "version"), [
    (key, v) for key in REQUESTS for v in range(SUPPORTED_VERSIONS[key][0],
                                                SUPPORTED_VERSIONS[key][1] + 1)])
def test_error_bodies_encode_and_carry_the_code(api_key: ApiKey, version: int) -> None:
    request = as_message(api_key, version, request_at(api_key, version))
    body = TRANSACTION_ERRORS[api_key](request, version, ErrorCode.NOT_COORDINATOR)
    _, decoded = decode_response(api_key, version, encode_response(api_key, version, 1, body))
    if api_key == ApiKey.ADD_PARTITIONS_TO_TXN and version < 4:
        decoded.pop("error_code", None)  # v4+ only: older clients read the partitions
    found = codes(decoded)
    assert found and set(found) == {ErrorCode.NOT_COORDINATOR}


def test_fenced_is_invalid_producer_epoch_for_old_versions() -> None:
    assert fenced_for_version(ErrorCode.PRODUCER_FENCED, 1) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert fenced_for_version(ErrorCode.PRODUCER_FENCED, 2) == ErrorCode.PRODUCER_FENCED
    assert fenced_for_version(ErrorCode.NOT_COORDINATOR, 0) == ErrorCode.NOT_COORDINATOR


def test_txn_offset_commit_before_v2_hears_coordinator_not_available_while_loading() -> None:
    loading = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert [txn_offset_commit_code(loading, v) for v in range(4)] == [
        ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_NOT_AVAILABLE, loading, loading]
    assert txn_offset_commit_code(ErrorCode.NOT_COORDINATOR, 0) == ErrorCode.NOT_COORDINATOR
