"""AlterPartitionReassignments and ListPartitionReassignments on a real broker socket: the
broker checks ALTER / DESCRIBE on the cluster, then forwards to the active controller, whose
decision moves the partition in the broker's image."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any

import trio

from broker.apis.api_versions import install_api_versions
from broker.apis.request import RequestRouter
from broker.config.endpoints import Listener
from broker.controller_client import ControllerClient
from broker.network import NetworkServer
from clients.protocol import ApiKey, ErrorCode
from metadata.acls import CLUSTER_NAME, AclOperation as Op, ResourceType as Res
from metadata.controller.reassignments import (
    alter_partition_reassignments,
    list_partition_reassignments,
)
from tests.unit.broker.apis.harness import running_broker
from tests.unit.broker.apis.test_authorization import AUTHORIZER, CLUSTER_DENIED, grant

DECISIONS = {ApiKey.ALTER_PARTITION_REASSIGNMENTS: alter_partition_reassignments,
             ApiKey.LIST_PARTITION_REASSIGNMENTS: list_partition_reassignments}


@asynccontextmanager
async def broker_with_controller(tmp_path, extra):  # type: ignore[no-untyped-def]
    """A broker whose CONTROLLER endpoint decides the two APIs against the broker's image
    and publishes the records; `asked` lists the API keys that reached it."""
    asked: list[int] = []
    holder: dict[str, Any] = {}

    async def handle(request, ctx) -> dict:  # type: ignore[no-untyped-def]
        asked.append(request.api_key)
        broker = holder["broker"]
        records, response = DECISIONS[request.api_key](broker.image, request.body, 0)
        broker.publish(records)
        return response

    router = RequestRouter()
    install_api_versions(router)
    for api_key in DECISIONS:
        router.register(api_key, handle)
    server = NetworkServer([Listener("CONTROLLER", "127.0.0.1", 0, "PLAINTEXT")], router)
    async with trio.open_nursery() as nursery:
        host, port = (await nursery.start(server.serve))["CONTROLLER"]
        channel = ControllerClient({9: (host, port)}, "test-broker")
        async with running_broker(tmp_path, channel=channel, extra=extra) as broker:
            holder["broker"] = broker
            yield broker, asked
        nursery.cancel_scope.cancel()


ALTER = {"timeout_ms": 5000, "topics": [{"name": "t", "partitions": [
    {"partition_index": 0, "replicas": [1, 7]}]}]}
LIST: dict[str, Any] = {"timeout_ms": 5000, "topics": None}


async def test_alter_needs_alter_and_list_needs_describe_on_the_cluster(tmp_path):
    async with broker_with_controller(tmp_path, AUTHORIZER) as (broker, asked):
        broker.create_topic("t")
        conn = await broker.connect()
        refused = await conn.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, ALTER)
        assert refused["error_code"] == CLUSTER_DENIED
        assert [p["error_code"] for t in refused["responses"] for p in t["partitions"]] == [
            CLUSTER_DENIED]
        listed = await conn.request(ApiKey.LIST_PARTITION_REASSIGNMENTS, LIST)
        assert listed["error_code"] == CLUSTER_DENIED and listed["topics"] == []
        assert asked == []
        broker.publish([grant(Res.CLUSTER, CLUSTER_NAME, Op.DESCRIBE)])
        listed = await conn.request(ApiKey.LIST_PARTITION_REASSIGNMENTS, LIST)
        assert listed["error_code"] == ErrorCode.NONE
        assert asked == [ApiKey.LIST_PARTITION_REASSIGNMENTS]
        await conn.aclose()


async def test_the_broker_forwards_and_the_controller_decides(tmp_path):
    async with broker_with_controller(tmp_path, {}) as (broker, asked):
        broker.create_topic("t")
        conn = await broker.connect()
        # Broker 7 is not registered: Kafka's INVALID_REPLICA_ASSIGNMENT.
        answer = await conn.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, ALTER)
        assert answer["error_code"] == ErrorCode.NONE
        assert answer["responses"] == [{"name": "t", "partitions": [{
            "partition_index": 0, "error_code": ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "error_message": "The manual partition assignment includes broker 7, but no such "
                             "broker is registered."}]}]
        listed = await conn.request(ApiKey.LIST_PARTITION_REASSIGNMENTS, LIST)
        assert listed["topics"] == []
        assert asked == [ApiKey.ALTER_PARTITION_REASSIGNMENTS,
                         ApiKey.LIST_PARTITION_REASSIGNMENTS]
        await conn.aclose()
