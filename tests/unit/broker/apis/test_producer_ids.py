"""InitProducerId: ids from blocks a (real, in-process) controller endpoint allocates."""

from __future__ import annotations

import trio

from broker.config.endpoints import Listener
from broker.controller_client import ControllerClient
from broker.apis.api_versions import install_api_versions
from broker.apis.request import RequestRouter
from broker.network import NetworkServer
from broker.producer_id_manager import controller_block_source
from clients.protocol import ApiKey, ErrorCode
from metadata.controller.producer_ids import allocate_producer_ids
from metadata.delta import apply_records
from metadata.settings import ControllerSettings
from tests.unit.broker.apis.harness import BROKER_ID, running_broker


class _ProducerIdController:
    """Serves AllocateProducerIds from the controller's decision function, committing its
    records into its own image."""

    def __init__(self, image) -> None:  # type: ignore[no-untyped-def]
        self.image = image
        self.settings = ControllerSettings(producer_id_block_size=3)

    async def handle(self, request, ctx):  # type: ignore[no-untyped-def]
        records, response = allocate_producer_ids(self.image, request.body, 0, settings=self.settings)
        _, self.image = apply_records(self.image, records)
        return response


async def init_producer_id(conn, **fields) -> dict:  # type: ignore[no-untyped-def]
    body = {"transactional_id": None, "transaction_timeout_ms": 60000, **fields}
    return await conn.request(ApiKey.INIT_PRODUCER_ID, body)


async def test_ids_come_from_controller_blocks_and_every_request_gets_a_new_one(tmp_path):
    async with trio.open_nursery() as nursery:
        holder: dict = {}

        async def source() -> tuple[int, int]:
            return await holder["allocate"]()

        async with running_broker(tmp_path, producer_id_source=source) as broker:
            controller = _ProducerIdController(broker.image)
            router = RequestRouter()
            install_api_versions(router)
            router.register(ApiKey.ALLOCATE_PRODUCER_IDS, controller.handle)
            server = NetworkServer([Listener("CONTROLLER", "127.0.0.1", 0, "PLAINTEXT")], router)
            host, port = (await nursery.start(server.serve))["CONTROLLER"]
            channel = ControllerClient({9: (host, port)}, "test-broker")
            # The harness registered broker 1 with epoch 1.
            holder["allocate"] = controller_block_source(channel, BROKER_ID, lambda: BROKER_ID)
            conn = await broker.connect()
            ids = [(await init_producer_id(conn))["producer_id"] for _ in range(5)]
            assert ids == [0, 1, 2, 3, 4]  # two blocks of three
            assert controller.image.next_producer_id == 6
            # Naming the current id and epoch (an epoch bump) still gets a new id, as in Kafka.
            bump = await init_producer_id(conn, producer_id=4, producer_epoch=0)
            assert (bump["error_code"], bump["producer_id"], bump["producer_epoch"]) == (0, 5, 0)
            assert (await init_producer_id(conn, producer_id=4))["error_code"] == ErrorCode.INVALID_REQUEST
            empty = await init_producer_id(conn, transactional_id="")
            assert empty["error_code"] == ErrorCode.INVALID_REQUEST
            # A transactional id goes to its coordinator: not this broker, which leads no
            # partition of __transaction_state.
            txn = await init_producer_id(conn, transactional_id="txn")
            assert txn["error_code"] == ErrorCode.NOT_COORDINATOR
            await conn.aclose()
            await channel.aclose()
            server.stop()


async def test_stale_broker_epoch_is_a_retriable_error(tmp_path):
    async with trio.open_nursery() as nursery:
        holder: dict = {}

        async def source() -> tuple[int, int]:
            return await holder["allocate"]()

        async with running_broker(tmp_path, producer_id_source=source) as broker:
            controller = _ProducerIdController(broker.image)
            router = RequestRouter()
            install_api_versions(router)
            router.register(ApiKey.ALLOCATE_PRODUCER_IDS, controller.handle)
            server = NetworkServer([Listener("CONTROLLER", "127.0.0.1", 0, "PLAINTEXT")], router)
            host, port = (await nursery.start(server.serve))["CONTROLLER"]
            channel = ControllerClient({9: (host, port)}, "test-broker")
            holder["allocate"] = controller_block_source(channel, BROKER_ID, lambda: 99)
            conn = await broker.connect()
            response = await init_producer_id(conn)
            assert response["error_code"] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            assert response["producer_id"] == -1
            await conn.aclose()
            await channel.aclose()
            server.stop()
