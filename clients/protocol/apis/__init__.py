"""Declarations of every supported API, and the registry keyed by API key."""

from __future__ import annotations

from clients.protocol.api_keys import ApiKey
from clients.protocol.apis import (acls, admin, client_quotas, consumer_groups, controller, core,
                                   fetch, groups, legacy_configs, metadata, offsets, operations,
                                   produce, reassignments, scram, topic_partitions, transactions,
                                   txn_markers)
from clients.protocol.schema import Api

APIS: dict[ApiKey, Api] = {
    ApiKey(api.key): api
    for module in (core, metadata, produce, fetch, groups, offsets, admin, controller, acls,
                   operations, scram, transactions, txn_markers, reassignments,
                   legacy_configs, client_quotas, topic_partitions, consumer_groups)
    for api in module.APIS
}

SUPPORTED_VERSIONS: dict[ApiKey, tuple[int, int]] = {key: api.versions for key, api in APIS.items()}
