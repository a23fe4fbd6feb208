"""Error answers of the broker-to-controller RPCs (BrokerRegistration, BrokerHeartbeat,
AlterPartition, AllocateProducerIds), which only the CONTROLLER listener serves: Kafka puts a
controller-wide error (NOT_CONTROLLER, REQUEST_TIMED_OUT, ...) at their top level."""

from __future__ import annotations

from typing import Any, Mapping

from broker.apis.request import ErrorBody
from clients.protocol import ApiKey


def alter_partition_error(body: Mapping[str, Any], version: int, code: int,
                          message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "topics": []}


def broker_registration_error(body: Mapping[str, Any], version: int, code: int,
                              message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "broker_epoch": -1}


def broker_heartbeat_error(body: Mapping[str, Any], version: int, code: int,
                           message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "is_caught_up": False, "is_fenced": True,
            "should_shut_down": False}


def allocate_producer_ids_error(body: Mapping[str, Any], version: int, code: int,
                                message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "producer_id_start": -1,
            "producer_id_len": 0}


CONTROLLER_RPC_ERRORS: dict[int, ErrorBody] = {
    ApiKey.ALTER_PARTITION: alter_partition_error,
    ApiKey.BROKER_REGISTRATION: broker_registration_error,
    ApiKey.BROKER_HEARTBEAT: broker_heartbeat_error,
    ApiKey.ALLOCATE_PRODUCER_IDS: allocate_producer_ids_error,
}
