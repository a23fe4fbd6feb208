"""AlterPartitionReassignments and ListPartitionReassignments (KIP-455): the error answers.

Brokers forward both to the active controller (`broker.apis.admin.ForwardingHandlers`), which
decides in `metadata.controller.reassignments`, where both responses are defined. The request
hook checks ALTER (alter) and DESCRIBE (list) on the cluster first, as Kafka's KafkaApis does.
"""

from __future__ import annotations

from broker.apis.request import ErrorBody
from clients.protocol import ApiKey
from metadata.controller.reassignments import (
    alter_partition_reassignments_error,
    list_partition_reassignments_error,
)

REASSIGNMENT_ERRORS: dict[int, ErrorBody] = {
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: alter_partition_reassignments_error,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: list_partition_reassignments_error,
}
