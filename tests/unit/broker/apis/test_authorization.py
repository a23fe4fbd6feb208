"""Every API's checks with the StandardAuthorizer on, on a real broker socket: the client is
User:ANONYMOUS from 127.0.0.1, allowed on the `open` topics and the `ok` group by ACLs, and
refused elsewhere with Kafka's error code, per topic, partition or group where Kafka answers
so."""

from __future__ import annotations

import random
import uuid
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from broker.apis.api_versions import install_api_versions
from broker.apis.request import RequestRouter
from broker.config.endpoints import Listener
from broker.controller_client import ControllerClient
from broker.network import NetworkServer
from metadata.controller.acls import create_acls, delete_acls
from metadata.controller.topics import create_topics
from metadata.settings import ControllerSettings

from broker.apis.request import ANONYMOUS_PRINCIPAL
from clients.net import KafkaConnectionError
from clients.protocol import ApiKey, ErrorCode
from metadata.acl_records import AccessControlEntryRecord, acl_entry_record
from metadata.acls import CLUSTER_NAME, StandardAcl, AclOperation as Op
from metadata.acls import AclPermissionType as Perm, PatternType as Pat, ResourceType as Res
from tests.unit.broker.apis.batches import batch, fetch_body, produce_body
from tests.unit.broker.apis.harness import running_broker

AUTHORIZER = {"authorizer.class.name": "StandardAuthorizer"}


class _Controller:
    """A CONTROLLER endpoint deciding CreateTopics, CreateAcls and DeleteAcls as the active
    controller does; its records go to the broker's image. `asked` counts what reached it."""

    def __init__(self) -> None:
        self.broker: Any = None
        self.asked: list[tuple[int, Any]] = []

    async def handle(self, request, ctx) -> dict:  # type: ignore[no-untyped-def]
        self.asked.append((request.api_key, request.body))
        image = self.broker.image
        if request.api_key == ApiKey.CREATE_TOPICS:
            records, response = create_topics(image, request.body, 0, rng=random.Random(1),
                                              settings=ControllerSettings())
        elif request.api_key == ApiKey.CREATE_ACLS:
            records, response = create_acls(image, request.body, 0)
        else:
            records, response = delete_acls(image, request.body, 0)
        self.broker.publish(records)
        return response


@asynccontextmanager
async def broker_with_controller(tmp_path, extra):  # type: ignore[no-untyped-def]
    controller = _Controller()
    router = RequestRouter()
    install_api_versions(router)
    for api_key in (ApiKey.CREATE_TOPICS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS):
        router.register(api_key, controller.handle)
    server = NetworkServer([Listener("CONTROLLER", "127.0.0.1", 0, "PLAINTEXT")], router)
    async with trio.open_nursery() as nursery:
        host, port = (await nursery.start(server.serve))["CONTROLLER"]
        channel = ControllerClient({9: (host, port)}, "test-broker")
        async with running_broker(tmp_path, channel=channel, extra=extra) as broker:
            controller.broker = broker
            yield broker, controller
        nursery.cancel_scope.cancel()
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def grant(rtype: Res, name: str, op: Op, *, pattern: Pat = Pat.LITERAL,
          perm: Perm = Perm.ALLOW, principal: str = ANONYMOUS_PRINCIPAL,
          host: str = "*") -> AccessControlEntryRecord:
    acl = StandardAcl(rtype, name, pattern, principal, host, op, perm)
    return acl_entry_record(uuid.uuid4(), acl)


OPEN_ACLS = [grant(Res.TOPIC, "open", Op.ALL, pattern=Pat.PREFIXED),
             grant(Res.TOPIC, "closed", Op.READ, principal="User:alice"),
             grant(Res.GROUP, "ok", Op.READ)]


def codes_by_topic(response: dict, topics_key: str, partitions_key: str,
                   name_key: str = "name") -> dict[str, list[int]]:
    return {t[name_key]: [p["error_code"] for p in t[partitions_key]]
            for t in response[topics_key]}


async def test_produce_and_fetch_are_refused_per_topic(tmp_path):
    async with running_broker(tmp_path, extra=AUTHORIZER) as broker:
        broker.create_topic("open-a")
        broker.create_topic("closed")
        broker.publish(OPEN_ACLS)
        conn = await broker.connect()
        body = produce_body("open-a", batch([b"x"]), acks=1)
        body["topic_data"].append({"name": "closed", "partition_data": [
            {"index": 0, "records": batch([b"y"])}]})
        produced = await conn.request(ApiKey.PRODUCE, body)
        assert codes_by_topic(produced, "responses", "partition_responses") == {
            "open-a": [ErrorCode.NONE], "closed": [TOPIC_DENIED]}
        assert broker.log("closed").log_end_offset == 0

        fetch = fetch_body("open-a")
        fetch["topics"] += fetch_body("closed")["topics"]
        fetched = await conn.request(ApiKey.FETCH, fetch)
        assert codes_by_topic(fetched, "responses", "partitions", "topic") == {
            "open-a": [ErrorCode.NONE], "closed": [TOPIC_DENIED]}

        # A follower's fetch needs CLUSTER_ACTION, which ANONYMOUS lacks here.
        as_follower = {**fetch_body("open-a"), "replica_id": 2}
        refused = await conn.request(ApiKey.FETCH, as_follower)
        assert codes_by_topic(refused, "responses", "partitions", "topic") == {
            "open-a": [TOPIC_DENIED]}
        await conn.aclose()


async def test_acks_zero_produce_to_a_refused_topic_closes_the_connection(tmp_path):
    async with running_broker(tmp_path, extra=AUTHORIZER) as broker:
        broker.create_topic("closed")
        broker.publish(OPEN_ACLS)
        conn = await broker.connect()
        assert await conn.request(ApiKey.PRODUCE, produce_body("closed", batch([b"y"]), acks=0)) == {}
        with pytest.raises(KafkaConnectionError):
            await conn.request(ApiKey.METADATA, {"topics": []})
        assert broker.log("closed").log_end_offset == 0


async def test_metadata_hides_undescribable_topics_and_needs_create_to_auto_create(tmp_path):
    async with broker_with_controller(tmp_path, AUTHORIZER) as (broker, controller):
        broker.create_topic("open-a")
        broker.create_topic("closed")
        broker.publish(OPEN_ACLS + [grant(Res.TOPIC, "new", Op.DESCRIBE)])
        conn = await broker.connect()
        everything = await conn.request(ApiKey.METADATA, {"topics": None}, 9)
        assert [t["name"] for t in everything["topics"]] == ["open-a"]
        named = await conn.request(ApiKey.METADATA, {"topics": [
            {"name": "closed"}, {"name": "open-a"}, {"name": "new"}, {"name": "open-new"}],
            "allow_auto_topic_creation": True, "include_topic_authorized_operations": True}, 9)
        by_name = {t["name"]: t for t in named["topics"]}
        assert by_name["closed"]["error_code"] == TOPIC_DENIED
        assert by_name["closed"]["partitions"] == []
        assert by_name["new"]["error_code"] == TOPIC_DENIED  # DESCRIBE but no CREATE
        assert by_name["open-new"]["error_code"] == ErrorCode.LEADER_NOT_AVAILABLE  # created
        assert by_name["open-a"]["error_code"] == ErrorCode.NONE
        operations = by_name["open-a"]["topic_authorized_operations"]
        assert operations & (1 << Op.WRITE) and operations & (1 << Op.ALTER_CONFIGS)
        with trio.fail_after(10):
            while not any(key == ApiKey.CREATE_TOPICS for key, _ in controller.asked):
                await trio.sleep(0.01)
        created = [t.name for key, body in controller.asked if key == ApiKey.CREATE_TOPICS
                   for t in body.topics]
        assert created == ["open-new"]
        cluster = await conn.request(ApiKey.DESCRIBE_CLUSTER,
                                     {"include_cluster_authorized_operations": True})
        assert cluster["cluster_authorized_operations"] == 0  # no DESCRIBE on the cluster
        await conn.aclose()


async def test_create_topics_is_refused_per_topic_before_forwarding(tmp_path):
    async with broker_with_controller(tmp_path, AUTHORIZER) as (broker, controller):
        broker.publish(OPEN_ACLS)
        conn = await broker.connect()
        response = await conn.request(ApiKey.CREATE_TOPICS, {"timeout_ms": 5000, "topics": [
            {"name": n, "num_partitions": 1, "replication_factor": 1, "assignments": [],
             "configs": []} for n in ("open-b", "elsewhere")]})
        codes = {t["name"]: t["error_code"] for t in response["topics"]}
        assert codes == {"open-b": ErrorCode.NONE, "elsewhere": TOPIC_DENIED}
        forwarded = [t.name for _, body in controller.asked for t in body.topics]
        assert forwarded == ["open-b"]
        await conn.aclose()


async def test_create_and_delete_acls_go_through_the_controller_with_alter(tmp_path):
    async with broker_with_controller(tmp_path, AUTHORIZER) as (broker, controller):
        conn = await broker.connect()
        creation = {"resource_type": 2, "resource_name": "x", "resource_pattern_type": 3,
                    "principal": "User:a", "host": "*", "operation": 3, "permission_type": 3}
        refused = await conn.request(ApiKey.CREATE_ACLS, {"creations": [creation]})
        assert refused["results"][0]["error_code"] == CLUSTER_DENIED
        assert controller.asked == []
        broker.publish([grant(Res.CLUSTER, CLUSTER_NAME, Op.ALTER)])
        created = await conn.request(ApiKey.CREATE_ACLS, {"creations": [creation]})
        assert created["results"][0]["error_code"] == ErrorCode.NONE
        assert any(a.principal == "User:a" for a in broker.image.acls)
        deleted = await conn.request(ApiKey.DELETE_ACLS, {"filters": [{
            "resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
            "principal_filter": "User:a", "host_filter": None, "operation": 1,
            "permission_type": 1}]})
        assert [m["resource_name"] for m in deleted["filter_results"][0]["matching_acls"]] == ["x"]
        assert not any(a.principal == "User:a" for a in broker.image.acls)
        await conn.aclose()


async def test_offsets_configs_and_delete_records_are_refused_per_topic(tmp_path):
    async with running_broker(tmp_path, extra=AUTHORIZER) as broker:
        broker.create_topic("open-a")
        broker.create_topic("closed")
        broker.publish(OPEN_ACLS)
        conn = await broker.connect()
        listed = await conn.request(ApiKey.LIST_OFFSETS, {"replica_id": -1, "topics": [
            {"name": n, "partitions": [{"partition_index": 0, "timestamp": -1}]}
            for n in ("open-a", "closed")]})
        assert codes_by_topic(listed, "topics", "partitions") == {
            "open-a": [ErrorCode.NONE], "closed": [TOPIC_DENIED]}
        deleted = await conn.request(ApiKey.DELETE_RECORDS, {"timeout_ms": 1000, "topics": [
            {"name": "closed", "partitions": [{"partition_index": 0, "offset": -1}]}]})
        assert codes_by_topic(deleted, "topics", "partitions") == {"closed": [TOPIC_DENIED]}
        configs = await conn.request(ApiKey.DESCRIBE_CONFIGS, {"resources": [
            {"resource_type": 2, "resource_name": "closed", "configuration_keys": None},
            {"resource_type": 2, "resource_name": "open-a", "configuration_keys": None},
            {"resource_type": 4, "resource_name": "1", "configuration_keys": None}]})
        assert [r["error_code"] for r in configs["results"]] == [
            TOPIC_DENIED, ErrorCode.NONE, CLUSTER_DENIED]
        await conn.aclose()


async def test_group_apis_need_the_group(tmp_path):
    async with running_broker(tmp_path, extra=AUTHORIZER) as broker:
        broker.publish(OPEN_ACLS)
        conn = await broker.connect()
        found = await conn.request(ApiKey.FIND_COORDINATOR,
                                   {"key_type": 0, "coordinator_keys": ["ok", "nope"]}, 4)
        codes = {c["key"]: c["error_code"] for c in found["coordinators"]}
        assert codes["nope"] == GROUP_DENIED and codes["ok"] != GROUP_DENIED
        txn = await conn.request(ApiKey.FIND_COORDINATOR,
                                 {"key_type": 1, "coordinator_keys": ["tx"]}, 4)
        assert txn["coordinators"][0]["error_code"] == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        joined = await conn.request(ApiKey.JOIN_GROUP, {
            "group_id": "nope", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
            "member_id": "", "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}]})
        assert joined["error_code"] == GROUP_DENIED
        heartbeat = await conn.request(ApiKey.HEARTBEAT, {"group_id": "nope", "generation_id": 1,
                                                          "member_id": "m"})
        assert heartbeat["error_code"] == GROUP_DENIED
        committed = await conn.request(ApiKey.OFFSET_COMMIT, {"group_id": "nope", "topics": [
            {"name": "open-a", "partitions": [{"partition_index": 0, "committed_offset": 1}]}]})
        assert committed["topics"][0]["partitions"][0]["error_code"] == GROUP_DENIED
        fetched = await conn.request(ApiKey.OFFSET_FETCH, {"groups": [
            {"group_id": "nope", "topics": None}]}, 8)
        assert fetched["groups"][0]["error_code"] == GROUP_DENIED
        described = await conn.request(ApiKey.DESCRIBE_GROUPS, {"groups": ["nope", "ok"],
                                                                "include_authorized_operations": True})
        nope, ok = described["groups"]
        assert nope["error_code"] == GROUP_DENIED
        # No __consumer_offsets here: an authorized principal learns that instead.
        assert ok["error_code"] == ErrorCode.NOT_COORDINATOR
        deleted = await conn.request(ApiKey.DELETE_GROUPS, {"groups_names": ["ok", "nope"]})
        assert [r["error_code"] for r in deleted["results"]][1] == GROUP_DENIED
        assert deleted["results"][0]["error_code"] == GROUP_DENIED  # READ is not DELETE
        await conn.aclose()


async def test_init_producer_id_and_transactional_produce(tmp_path):
    from tests.unit.broker.apis.harness import counting_producer_ids

    async with running_broker(tmp_path, extra=AUTHORIZER,
                              producer_id_source=counting_producer_ids()) as broker:
        conn = await broker.connect()
        body = {"transactional_id": None, "transaction_timeout_ms": 60000,
                "producer_id": -1, "producer_epoch": -1}
        refused = await conn.request(ApiKey.INIT_PRODUCER_ID, body)
        assert refused["error_code"] == CLUSTER_DENIED  # no WRITE on any topic yet
        broker.publish(OPEN_ACLS)
        allowed = await conn.request(ApiKey.INIT_PRODUCER_ID, body)
        assert allowed["error_code"] == ErrorCode.NONE  # WRITE on the open- topics
        txn = await conn.request(ApiKey.INIT_PRODUCER_ID, {**body, "transactional_id": "tx"})
        assert txn["error_code"] == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        produce = {**produce_body("open-a", batch([b"x"]), acks=1), "transactional_id": "tx"}
        produced = await conn.request(ApiKey.PRODUCE, produce)
        assert produced["responses"][0]["partition_responses"][0]["error_code"] == \
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        await conn.aclose()


async def test_acl_apis_need_the_cluster_and_describe_reads_the_image(tmp_path):
    async with running_broker(tmp_path, extra=AUTHORIZER) as broker:
        broker.publish(OPEN_ACLS)
        conn = await broker.connect()
        any_filter = {"resource_type_filter": 1, "resource_name_filter": None,
                      "pattern_type_filter": 1, "principal_filter": None, "host_filter": None,
                      "operation": 1, "permission_type": 1}
        refused = await conn.request(ApiKey.DESCRIBE_ACLS, any_filter)
        assert refused["error_code"] == CLUSTER_DENIED and refused["resources"] == []
        broker.publish([grant(Res.CLUSTER, CLUSTER_NAME, Op.DESCRIBE)])
        described = await conn.request(ApiKey.DESCRIBE_ACLS, any_filter)
        assert described["error_code"] == ErrorCode.NONE
        names = sorted((r["resource_type"], r["resource_name"]) for r in described["resources"])
        assert names == [(Res.TOPIC, "closed"), (Res.TOPIC, "open"), (Res.GROUP, "ok"),
                         (Res.CLUSTER, CLUSTER_NAME)]
        alice = await conn.request(ApiKey.DESCRIBE_ACLS, {**any_filter,
                                                          "principal_filter": "User:alice"})
        assert [r["resource_name"] for r in alice["resources"]] == ["closed"]
        await conn.aclose()


def test_the_router_hook_needs_the_cluster_operation_of_the_api():
    from types import SimpleNamespace

    from broker.apis.authorization import (
        BROKER_CLUSTER_OPERATIONS,
        CONTROLLER_CLUSTER_OPERATIONS,
        Authorization,
        RequestAuthorizer,
    )
    from metadata.authorizer import StandardAuthorizer
    from metadata.delta import apply_records
    from metadata.image import MetadataImage

    image = apply_records(MetadataImage.empty(), [
        grant(Res.CLUSTER, CLUSTER_NAME, Op.DESCRIBE),
        grant(Res.CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION, principal="User:broker")])[1]
    authz = Authorization(StandardAuthorizer(), lambda: image)
    broker_hook = RequestAuthorizer(authz, BROKER_CLUSTER_OPERATIONS)
    controller_hook = RequestAuthorizer(authz, CONTROLLER_CLUSTER_OPERATIONS)

    def ctx(principal: str) -> SimpleNamespace:
        return SimpleNamespace(principal=principal, peer=("127.0.0.1", 5000))

    def request(api_key: int) -> SimpleNamespace:
        return SimpleNamespace(api_key=api_key)

    anonymous = ctx(ANONYMOUS_PRINCIPAL)
    assert broker_hook.authorize(request(ApiKey.DESCRIBE_ACLS), anonymous) == ErrorCode.NONE
    assert broker_hook.authorize(request(ApiKey.CREATE_ACLS), anonymous) == CLUSTER_DENIED
    assert broker_hook.authorize(request(ApiKey.DELETE_ACLS), anonymous) == CLUSTER_DENIED
    assert broker_hook.authorize(request(ApiKey.PRODUCE), anonymous) == ErrorCode.NONE
    for api_key in (ApiKey.BROKER_REGISTRATION, ApiKey.BROKER_HEARTBEAT, ApiKey.CREATE_TOPICS,
                    ApiKey.ALTER_PARTITION, ApiKey.CREATE_ACLS):
        assert controller_hook.authorize(request(api_key), anonymous) == CLUSTER_DENIED
        assert controller_hook.authorize(request(api_key), ctx("User:broker")) == ErrorCode.NONE


async def test_super_users_pass_every_check_despite_deny(tmp_path):
    extra = {**AUTHORIZER, "super.users": "User:admin;User:ANONYMOUS"}
    async with running_broker(tmp_path, extra=extra) as broker:
        broker.create_topic("closed")
        broker.publish([grant(Res.TOPIC, "*", Op.ALL, perm=Perm.DENY)])
        conn = await broker.connect()
        produced = await conn.request(ApiKey.PRODUCE, produce_body("closed", batch([b"y"]), acks=1))
        assert produced["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.NONE
        await conn.aclose()


async def test_without_an_authorizer_acl_apis_answer_security_disabled(tmp_path):
    async with running_broker(tmp_path) as broker:
        conn = await broker.connect()
        described = await conn.request(ApiKey.DESCRIBE_ACLS, {
            "resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
            "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1})
        assert described["error_code"] == ErrorCode.SECURITY_DISABLED
        await conn.aclose()
