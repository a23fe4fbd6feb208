"""The transactional APIs' checks with the StandardAuthorizer on, on a real broker socket:
the client is User:ANONYMOUS from 127.0.0.1, allowed on the `open` topics and the `ok` group
(test_authorization's OPEN_ACLS), and on the transactional ids the test grants. Each API is
refused with Kafka's error code, per partition, topic or id where Kafka answers so, and
passes the check once the ACL is there."""

from __future__ import annotations

from typing import Any

from broker.txn.metadata import TxnEntry, TxnMetadata, TxnState
from clients.protocol import ApiKey, ErrorCode
from metadata.acls import CLUSTER_NAME, AclOperation as Op, ResourceType as Res
from tests.unit.broker.apis.batches import batch, produce_body
from tests.unit.broker.apis.harness import counting_producer_ids, running_broker
from tests.unit.broker.apis.test_authorization import (
    AUTHORIZER,
    CLUSTER_DENIED,
    GROUP_DENIED,
    OPEN_ACLS,
    TOPIC_DENIED,
    codes_by_topic,
    grant,
)
from tests.unit.broker.apis.test_transactions import markers_body

TXN_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
REFUSALS = {TOPIC_DENIED, GROUP_DENIED, CLUSTER_DENIED, TXN_DENIED}


def transactional_broker(tmp_path):  # type: ignore[no-untyped-def]
    """A broker with a transaction coordinator (it has producer ids) and the authorizer."""
    return running_broker(tmp_path, extra=AUTHORIZER, producer_id_source=counting_producer_ids())


def add_partitions_v3(partitions: dict[str, list[int]], txn: str = "tx") -> dict[str, Any]:
    return {"v3_and_below_transactional_id": txn, "v3_and_below_producer_id": 1000,
            "v3_and_below_producer_epoch": 0,
            "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in partitions.items()]}


def add_partitions_codes(response: dict) -> dict[str, list[int]]:
    return {t["name"]: [p["partition_error_code"] for p in t["results_by_partition"]]
            for t in response["results_by_topic_v3_and_below"]}


def txn_offset_commit(group: str, topics: dict[str, list[int]], txn: str = "tx") -> dict:
    return {"transactional_id": txn, "group_id": group, "producer_id": 1000,
            "producer_epoch": 0, "topics": [
                {"name": t, "partitions": [{"partition_index": p, "committed_offset": 1}
                                           for p in ps]} for t, ps in topics.items()]}


async def test_add_partitions_to_txn_needs_the_transactional_id_and_each_topic(tmp_path):
    async with transactional_broker(tmp_path) as broker:
        broker.create_topic("open-a", 2)
        broker.create_topic("closed")
        broker.publish(OPEN_ACLS)
        conn = await broker.connect()
        wanted = {"open-a": [0, 1], "closed": [0]}
        refused = await conn.request(ApiKey.ADD_PARTITIONS_TO_TXN, add_partitions_v3(wanted), 3)
        assert add_partitions_codes(refused) == {"open-a": [TXN_DENIED] * 2,
                                                 "closed": [TXN_DENIED]}

        broker.publish([grant(Res.TRANSACTIONAL_ID, "tx", Op.WRITE)])
        partly = await conn.request(ApiKey.ADD_PARTITIONS_TO_TXN, add_partitions_v3(wanted), 3)
        # As Kafka: nothing is added, the writable partitions were not attempted.
        assert add_partitions_codes(partly) == {
            "open-a": [ErrorCode.OPERATION_NOT_ATTEMPTED] * 2, "closed": [TOPIC_DENIED]}
        allowed = await conn.request(ApiKey.ADD_PARTITIONS_TO_TXN,
                                     add_partitions_v3({"open-a": [0]}), 3)
        code = add_partitions_codes(allowed)["open-a"][0]
        assert code not in REFUSALS and code != ErrorCode.OPERATION_NOT_ATTEMPTED

        # As Kafka: a client never adds an internal topic's partitions, even with WRITE on it.
        broker.create_topic("__consumer_offsets")
        broker.publish([grant(Res.TOPIC, "__consumer_offsets", Op.WRITE)])
        internal = await conn.request(ApiKey.ADD_PARTITIONS_TO_TXN, add_partitions_v3(
            {"__consumer_offsets": [0], "open-a": [0]}), 3)
        assert add_partitions_codes(internal) == {
            "__consumer_offsets": [TOPIC_DENIED], "open-a": [ErrorCode.OPERATION_NOT_ATTEMPTED]}

        # The batched form (v4+) is the brokers' own: CLUSTER_ACTION, whatever the id's ACLs.
        batched = {"transactions": [{"transactional_id": "tx", "producer_id": 1000,
                                     "producer_epoch": 0, "verify_only": True,
                                     "topics": [{"name": "open-a", "partitions": [0]}]}]}
        as_client = await conn.request(ApiKey.ADD_PARTITIONS_TO_TXN, batched, 4)
        assert as_client["error_code"] == CLUSTER_DENIED
        assert as_client["results_by_transaction"] == []
        broker.publish([grant(Res.CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)])
        as_broker = await conn.request(ApiKey.ADD_PARTITIONS_TO_TXN, batched, 4)
        assert as_broker["error_code"] == ErrorCode.NONE
        assert [r["transactional_id"] for r in as_broker["results_by_transaction"]] == ["tx"]
        await conn.aclose()


async def test_add_offsets_and_end_txn_need_the_transactional_id_and_the_group(tmp_path):
    async with transactional_broker(tmp_path) as broker:
        broker.publish(OPEN_ACLS)
        conn = await broker.connect()
        offsets = {"transactional_id": "tx", "producer_id": 1000, "producer_epoch": 0,
                   "group_id": "ok"}
        end = {"transactional_id": "tx", "producer_id": 1000, "producer_epoch": 0,
               "committed": True}
        assert (await conn.request(ApiKey.ADD_OFFSETS_TO_TXN, offsets))["error_code"] == TXN_DENIED
        assert (await conn.request(ApiKey.END_TXN, end))["error_code"] == TXN_DENIED

        broker.publish([grant(Res.TRANSACTIONAL_ID, "tx", Op.WRITE)])
        no_group = await conn.request(ApiKey.ADD_OFFSETS_TO_TXN, {**offsets, "group_id": "nope"})
        assert no_group["error_code"] == GROUP_DENIED
        assert (await conn.request(ApiKey.ADD_OFFSETS_TO_TXN, offsets))["error_code"] \
            not in REFUSALS
        assert (await conn.request(ApiKey.END_TXN, end))["error_code"] not in REFUSALS
        # DESCRIBE (what WRITE implies) is not WRITE.
        broker.publish([grant(Res.TRANSACTIONAL_ID, "seen", Op.DESCRIBE)])
        seen = await conn.request(ApiKey.END_TXN, {**end, "transactional_id": "seen"})
        assert seen["error_code"] == TXN_DENIED
        await conn.aclose()


async def test_txn_offset_commit_needs_the_id_the_group_and_read_per_topic(tmp_path):
    async with transactional_broker(tmp_path) as broker:
        broker.create_topic("open-a")
        broker.create_topic("closed")
        broker.publish(OPEN_ACLS)
        conn = await broker.connect()
        topics = {"open-a": [0], "closed": [0]}
        refused = await conn.request(ApiKey.TXN_OFFSET_COMMIT, txn_offset_commit("ok", topics))
        assert codes_by_topic(refused, "topics", "partitions") == {
            "open-a": [TXN_DENIED], "closed": [TXN_DENIED]}

        broker.publish([grant(Res.TRANSACTIONAL_ID, "tx", Op.WRITE)])
        no_group = await conn.request(ApiKey.TXN_OFFSET_COMMIT, txn_offset_commit("nope", topics))
        assert codes_by_topic(no_group, "topics", "partitions") == {
            "open-a": [GROUP_DENIED], "closed": [GROUP_DENIED]}

        per_topic = codes_by_topic(await conn.request(
            ApiKey.TXN_OFFSET_COMMIT, txn_offset_commit("ok", topics)), "topics", "partitions")
        # No __consumer_offsets here: the readable topic learns that, the other its refusal.
        assert per_topic == {"open-a": [ErrorCode.NOT_COORDINATOR], "closed": [TOPIC_DENIED]}
        only_closed = await conn.request(ApiKey.TXN_OFFSET_COMMIT,
                                         txn_offset_commit("ok", {"closed": [0]}))
        assert codes_by_topic(only_closed, "topics", "partitions") == {"closed": [TOPIC_DENIED]}
        await conn.aclose()


async def test_write_txn_markers_needs_cluster_action(tmp_path):
    async with running_broker(tmp_path, extra=AUTHORIZER) as broker:
        broker.create_topic("open-a")
        broker.publish(OPEN_ACLS)
        conn = await broker.connect()
        body = markers_body(7, True, {"open-a": [0]})
        refused = await conn.request(ApiKey.WRITE_TXN_MARKERS, body)
        assert refused["markers"][0]["topics"][0]["partitions"][0]["error_code"] == CLUSTER_DENIED
        assert broker.log("open-a").log_end_offset == 0

        broker.publish([grant(Res.CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)])
        written = await conn.request(ApiKey.WRITE_TXN_MARKERS, body)
        assert written["markers"][0]["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
        assert broker.log("open-a").log_end_offset == 1
        await conn.aclose()


async def test_describe_producers_needs_read_per_topic(tmp_path):
    async with running_broker(tmp_path, extra=AUTHORIZER) as broker:
        broker.create_topic("open-a")
        broker.create_topic("closed")
        broker.publish(OPEN_ACLS)
        conn = await broker.connect()
        produced = await conn.request(ApiKey.PRODUCE, produce_body("open-a", batch([b"x"]), acks=1))
        assert produced["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.NONE
        described = await conn.request(ApiKey.DESCRIBE_PRODUCERS, {"topics": [
            {"name": "open-a", "partition_indexes": [0]},
            {"name": "closed", "partition_indexes": [0]}]})
        assert codes_by_topic(described, "topics", "partitions") == {
            "open-a": [ErrorCode.NONE], "closed": [TOPIC_DENIED]}
        closed = described["topics"][1]["partitions"][0]
        assert closed["error_message"] == "Topic authorization failed."
        assert closed["active_producers"] == []
        await conn.aclose()


def seed_transaction(broker, transactional_id: str, partitions: set[tuple[str, int]]) -> None:  # type: ignore[no-untyped-def]
    """An ongoing transaction in the coordinator's state, as loading its
    `__transaction_state` partition would leave it."""
    state = broker.server.transaction_coordinator.state
    state.entries[transactional_id] = TxnEntry(TxnMetadata(
        transactional_id, producer_id=1000 + len(state.entries), producer_epoch=0,
        timeout_ms=60000, state=TxnState.ONGOING, partitions=frozenset(partitions),
        start_ms=1, last_update_ms=1))
    state.runtime._loaded[state.partition_for(transactional_id)] = 0


async def test_describe_and_list_transactions_show_only_what_may_be_described(tmp_path):
    async with transactional_broker(tmp_path) as broker:
        broker.publish(OPEN_ACLS)
        seed_transaction(broker, "mine", {("open-a", 0), ("closed", 0), ("closed", 1)})
        seed_transaction(broker, "theirs", {("open-a", 1)})
        conn = await broker.connect()
        listed = await conn.request(ApiKey.LIST_TRANSACTIONS, {"state_filters": [],
                                                               "producer_id_filters": []})
        assert listed["error_code"] == ErrorCode.NONE and listed["transaction_states"] == []
        described = await conn.request(ApiKey.DESCRIBE_TRANSACTIONS,
                                       {"transactional_ids": ["mine", "theirs"]})
        assert [s["error_code"] for s in described["transaction_states"]] == [TXN_DENIED] * 2

        broker.publish([grant(Res.TRANSACTIONAL_ID, "mine", Op.WRITE)])  # implies DESCRIBE
        listed = await conn.request(ApiKey.LIST_TRANSACTIONS, {"state_filters": [],
                                                               "producer_id_filters": []})
        assert [s["transactional_id"] for s in listed["transaction_states"]] == ["mine"]
        described = await conn.request(ApiKey.DESCRIBE_TRANSACTIONS,
                                       {"transactional_ids": ["mine", "theirs"]})
        mine, theirs = described["transaction_states"]
        assert (mine["error_code"], theirs["error_code"]) == (ErrorCode.NONE, TXN_DENIED)
        assert mine["transaction_state"] == "Ongoing"
        # As Kafka: the partitions of `closed`, which the principal may not describe, are left out.
        assert mine["topics"] == [{"topic": "open-a", "partitions": [0]}]
        await conn.aclose()


async def test_without_an_authorizer_the_transactional_apis_check_nothing(tmp_path):
    async with running_broker(tmp_path, producer_id_source=counting_producer_ids()) as broker:
        broker.create_topic("closed")
        seed_transaction(broker, "mine", {("closed", 0)})
        conn = await broker.connect()
        listed = await conn.request(ApiKey.LIST_TRANSACTIONS, {"state_filters": [],
                                                               "producer_id_filters": []})
        assert [s["transactional_id"] for s in listed["transaction_states"]] == ["mine"]
        described = await conn.request(ApiKey.DESCRIBE_TRANSACTIONS,
                                       {"transactional_ids": ["mine"]})
        assert described["transaction_states"][0]["topics"] == [{"topic": "closed",
                                                                 "partitions": [0]}]
        added = await conn.request(ApiKey.ADD_PARTITIONS_TO_TXN,
                                   add_partitions_v3({"closed": [0]}, "other"), 3)
        assert add_partitions_codes(added)["closed"][0] not in REFUSALS
        batched = await conn.request(ApiKey.ADD_PARTITIONS_TO_TXN, {"transactions": [
            {"transactional_id": "mine", "producer_id": 1000, "producer_epoch": 0,
             "verify_only": True, "topics": [{"name": "closed", "partitions": [0]}]}]}, 4)
        assert batched["error_code"] == ErrorCode.NONE
        markers = await conn.request(ApiKey.WRITE_TXN_MARKERS,
                                     markers_body(7, True, {"closed": [0]}))
        assert markers["markers"][0]["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
        await conn.aclose()
