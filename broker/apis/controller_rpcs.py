"""Error answers of the broker-to-controller RPCs (BrokerRegistration, BrokerHeartbeat,
AlterPartition, AllocateProducerIds), which only the CONTROLLER listener serves: Kafka puts a
controller-wide error (NOT_CONTROLLER, REQUEST_TIMED_OUT, ...) at their top level."""

from __future__ import annotations

from broker.apis.request import ErrorBody
from clients.protocol import ApiKey
from clients.protocol.messages.allocate_producer_ids import (
    AllocateProducerIdsRequestData,
    AllocateProducerIdsResponseData,
)
from clients.protocol.messages.alter_partition import (
    AlterPartitionRequestData,
    AlterPartitionResponseData,
)
from clients.protocol.messages.broker_heartbeat import (
    BrokerHeartbeatRequestData,
    BrokerHeartbeatResponseData,
)
from clients.protocol.messages.broker_registration import (
    BrokerRegistrationRequestData,
    BrokerRegistrationResponseData,
)


def alter_partition_error(body: AlterPartitionRequestData, version: int, code: int,
                          message: str | None = None) -> AlterPartitionResponseData:
    return AlterPartitionResponseData(error_code=code)


def broker_registration_error(body: BrokerRegistrationRequestData, version: int, code: int,
                              message: str | None = None) -> BrokerRegistrationResponseData:
    return BrokerRegistrationResponseData(error_code=code, broker_epoch=-1)


def broker_heartbeat_error(body: BrokerHeartbeatRequestData, version: int, code: int,
                           message: str | None = None) -> BrokerHeartbeatResponseData:
    return BrokerHeartbeatResponseData(error_code=code, is_caught_up=False, is_fenced=True,
                                       should_shut_down=False)


def allocate_producer_ids_error(body: AllocateProducerIdsRequestData, version: int, code: int,
                                message: str | None = None) -> AllocateProducerIdsResponseData:
    return AllocateProducerIdsResponseData(error_code=code, producer_id_start=-1,
                                           producer_id_len=0)


CONTROLLER_RPC_ERRORS: dict[int, ErrorBody] = {
    ApiKey.ALTER_PARTITION: alter_partition_error,
    ApiKey.BROKER_REGISTRATION: broker_registration_error,
    ApiKey.BROKER_HEARTBEAT: broker_heartbeat_error,
    ApiKey.ALLOCATE_PRODUCER_IDS: allocate_producer_ids_error,
}
