"""Client quotas on a real broker socket: DescribeClientQuotas from the image and its
DESCRIBE_CONFIGS check, and a produce over its quota answered with throttle_time_ms
while the connection's next request waits."""

from __future__ import annotations

import trio

from clients.protocol import ApiKey, ErrorCode
from metadata.acls import CLUSTER_NAME, AclOperation as Op, ResourceType as Res
from metadata.client_quotas import ClientQuotaRecord, EntityData
from tests.unit.broker.apis.batches import batch, produce_body
from tests.unit.broker.apis.harness import running_broker
from tests.unit.broker.apis.test_authorization import AUTHORIZER, CLUSTER_DENIED, grant

DESCRIBE_ALL = {"components": [], "strict": False}


async def test_describe_client_quotas_reads_the_image_and_needs_describe_configs(tmp_path):
    async with running_broker(tmp_path, extra=AUTHORIZER) as broker:
        broker.publish([ClientQuotaRecord((EntityData("user", "alice"),), "producer_byte_rate",
                                          1024.0, False)])
        conn = await broker.connect()
        refused = await conn.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, DESCRIBE_ALL)
        assert refused["error_code"] == CLUSTER_DENIED
        broker.publish([grant(Res.CLUSTER, CLUSTER_NAME, Op.DESCRIBE_CONFIGS)])
        described = await conn.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, DESCRIBE_ALL)
        assert described["error_code"] == ErrorCode.NONE
        assert described["entries"] == [
            {"entity": [{"entity_type": "user", "entity_name": "alice"}],
             "values": [{"key": "producer_byte_rate", "value": 1024.0}]}]
        await conn.aclose()


async def test_a_produce_over_quota_is_throttled_and_the_connection_muted(tmp_path):
    async with running_broker(tmp_path) as broker:
        broker.create_topic("t")
        # The harness connects as client id `dataplane-test`: 100 bytes/s of produce.
        broker.publish([ClientQuotaRecord((EntityData("client-id", "dataplane-test"),),
                                          "producer_byte_rate", 100.0, False)])
        conn = await broker.connect()
        first = await conn.request(ApiKey.PRODUCE, produce_body("t", batch([b"x" * 3000]),
                                                                acks=1))
        # 3000 bytes in the ten-second minimum window: 300 B/s against 100, two windows.
        throttle = first["throttle_time_ms"]
        assert 15_000 <= throttle <= 25_000
        assert first["responses"][0]["partition_responses"][0]["error_code"] == 0
        with trio.move_on_after(1.0) as waited:
            await conn.request(ApiKey.METADATA, {"topics": []})
        assert waited.cancelled_caught, "the muted connection answered its next request"
        await conn.aclose()


def test_alter_client_quotas_needs_alter_configs_on_the_cluster():
    from types import SimpleNamespace

    from broker.apis.authorization import (
        BROKER_CLUSTER_OPERATIONS,
        Authorization,
        RequestAuthorizer,
    )
    from metadata.authorizer import StandardAuthorizer
    from metadata.delta import apply_records
    from metadata.image import MetadataImage

    image = apply_records(MetadataImage.empty(), [
        grant(Res.CLUSTER, CLUSTER_NAME, Op.ALTER_CONFIGS, principal="User:admin")])[1]
    hook = RequestAuthorizer(Authorization(StandardAuthorizer(), lambda: image),
                             BROKER_CLUSTER_OPERATIONS)
    request = SimpleNamespace(api_key=ApiKey.ALTER_CLIENT_QUOTAS)
    for principal, code in (("User:admin", ErrorCode.NONE), ("User:bob", CLUSTER_DENIED)):
        ctx = SimpleNamespace(principal=principal, peer=("127.0.0.1", 5000))
        assert hook.authorize(request, ctx) == code
