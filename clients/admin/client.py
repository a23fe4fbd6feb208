"""The admin client: ``Admin`` (trio), running ``operations``; ``BlockingAdmin`` (in
``blocking``) has the same methods over blocking connections.

Requests that change the cluster go to the controller Metadata names (a broker forwards
them to the active controller otherwise); reads go to any broker. A connection failure
refreshes metadata and tries once more on another broker. Beyond that, as Kafka's admin
client, retriable failures (see ``retries``) are retried with backoff until
``default.api.timeout.ms``: a call whose answer failed as a whole is sent again, an
operation whose coordinator or leader moved starts over.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any, Iterable, Mapping, Sequence

import trio

from clients.admin import cluster_operations as cops
from clients.admin import acl_operations as acls
from clients.admin.admin_config import ADMIN_KEYS, AdminConfig, pick_target
from clients.admin.blocking import BlockingAdmin
from clients.admin import broker_config_operations as bcops
from clients.admin import group_operations as gops
from clients.admin import operations as ops
from clients.admin import retries
from clients.admin import transaction_operations as tops
from clients.common.cluster import ClusterMetadata, metadata_request
from clients.common.connections import TrioConnectionPool
from clients.admin.retries import RetryBudget
from clients.admin import scram_operations as scram_ops
from clients.admin import group_batch_operations as batch_gops
from clients.admin import reassignment_operations as reassign_ops
from clients.admin import quota_operations as quota_ops
from clients.admin import topic_partitions_operations as tp_ops
from clients.net import FatalConnectionError, KafkaConnectionError
from clients.net.failure_log import UnreachableNotice
from clients.protocol import ApiKey, ErrorCode, KafkaError

__all__ = ["ADMIN_KEYS", "Admin", "AdminConfig", "BlockingAdmin"]

logger = logging.getLogger(__name__)


class Admin:
    """Trio admin client: ``async with Admin({"bootstrap.servers": ...}) as admin``."""

    def __init__(self, config: AdminConfig | Mapping[str, Any] | None = None,
                 **overrides: Any) -> None:
        if not isinstance(config, AdminConfig):
            config = AdminConfig.from_mapping(config, **overrides)
        self.config = config
        self._pool = TrioConnectionPool(config.bootstrap_servers, config.client_id,
                                        config.connect_timeout_ms / 1000,
                                        config.request_timeout_ms / 1000,
                                        security=config.security, sasl=config.sasl)
        self._unreachable = UnreachableNotice(logger, f"default.api.timeout.ms "
                                              f"({config.default_api_timeout_ms} ms) runs out")
        self._cluster: ClusterMetadata | None = None

    async def __aenter__(self) -> Admin:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._pool.aclose()

    async def create_topics(self, topics: Iterable[ops.NewTopic], validate_only: bool = False
                            ) -> dict[str, uuid.UUID]:
        return await self._retrying(ops.create_topics, topics, validate_only)

    async def delete_topics(self, names: Iterable[str]) -> None:
        await self._retrying(ops.delete_topics, names)

    async def list_topics(self, include_internal: bool = False) -> list[str]:
        return await self._retrying(ops.list_topics, include_internal)

    async def describe_topics(self, names: Iterable[str] | None = None
                              ) -> list[ops.TopicDescription]:
        return await self._retrying(ops.describe_topics, names)

    async def create_partitions(self, new_totals: Mapping[str, int],
                                validate_only: bool = False) -> None:
        await self._retrying(ops.create_partitions, new_totals, validate_only)

    async def elect_leaders(self, election_type: int,
                            partitions: Iterable[ops.TopicPartition] | None = None
                            ) -> list[cops.ElectionResult]:
        return await self._retrying(cops.elect_leaders, election_type, partitions)

    async def describe_log_dirs(self, broker_id: int, topics: Iterable[str] | None = None
                                ) -> list[cops.LogDirDescription]:
        return await self._retrying(cops.describe_log_dirs, broker_id, topics)

    async def unregister_broker(self, broker_id: int) -> None:
        await self._retrying(cops.unregister_broker, broker_id)

    async def describe_configs(self, topic: str, keys: Iterable[str] | None = None
                               ) -> dict[str, ops.ConfigEntry]:
        return await self._retrying(ops.describe_configs, topic, ops.TOPIC_RESOURCE, keys)

    async def incremental_alter_configs(self, topic: str, changes: Mapping[str, str | None],
                                        validate_only: bool = False) -> None:
        await self._retrying(ops.incremental_alter_configs, topic, changes, ops.TOPIC_RESOURCE,
                             validate_only)

    async def describe_cluster(self) -> ops.ClusterDescription:
        return await self._retrying(ops.describe_cluster)

    async def delete_groups(self, group_ids: Iterable[str]) -> None:
        await self._retrying(gops.delete_groups, group_ids)

    async def alter_group_offsets(self, group_id: str,
                                  offsets: Mapping[ops.TopicPartition, int]) -> None:
        await self._retrying(gops.alter_group_offsets, group_id, offsets)

    async def delete_group_offsets(self, group_id: str,
                                   partitions: Iterable[ops.TopicPartition]) -> None:
        await self._retrying(gops.delete_group_offsets, group_id, partitions)

    async def delete_group_offsets_each(self, group_id: str,
                                        partitions: Iterable[ops.TopicPartition]
                                        ) -> dict[ops.TopicPartition, ErrorCode]:
        """OffsetDelete's outcome per partition; a group-level error raises KafkaError."""
        return await self._retrying(gops.delete_group_offsets_each, group_id, partitions)

    async def list_offsets(self, timestamps: Mapping[ops.TopicPartition, int],
                           isolation_level: int = 0) -> dict[ops.TopicPartition, Any]:
        """{partition: ListedOffset | None | KafkaError}; see ``operations.list_offsets``."""
        return await self._retrying(ops.list_offsets, timestamps, isolation_level)

    async def upsert_scram_credential(self, user: str, mechanism: str, password: str,
                                      iterations: int = scram_ops.DEFAULT_ITERATIONS) -> None:
        await self._retrying(scram_ops.upsert_scram_credential, user, mechanism, password,
                             iterations)

    async def delete_scram_credential(self, user: str, mechanism: str) -> None:
        await self._retrying(scram_ops.delete_scram_credential, user, mechanism)

    async def describe_scram_credentials(self, users: Iterable[str] | None = None
                                         ) -> dict[str, list[tuple[str, int]]]:
        return await self._retrying(scram_ops.describe_scram_credentials, users)

    async def delete_records(self, before: Mapping[ops.TopicPartition, int]
                             ) -> dict[ops.TopicPartition, int | KafkaError]:
        """{partition: low watermark | KafkaError}; see ``operations.delete_records``."""
        return await self._retrying(ops.delete_records, before)

    async def list_groups(self) -> list[gops.GroupListing]:
        return await self._retrying(gops.list_groups)

    async def describe_groups(self, groups: Iterable[str]
                              ) -> dict[str, gops.GroupDescription | KafkaError]:
        return await self._retrying(gops.describe_groups, groups)

    async def list_group_offsets(self, group: str) -> dict[ops.TopicPartition, int]:
        return await self._retrying(gops.list_group_offsets, group)

    async def describe_quorum(self) -> gops.QuorumInfo:
        return await self._retrying(gops.describe_quorum)

    async def list_transactions(self, state_filters: Iterable[str] = (),
                                producer_id_filters: Iterable[int] = (),
                                duration_filter_ms: int = -1) -> list[tops.TransactionListing]:
        return await self._retrying(tops.list_transactions, state_filters, producer_id_filters,
                                    duration_filter_ms)

    async def describe_transactions(self, transactional_ids: Iterable[str]
                                    ) -> dict[str, tops.TransactionDescription | KafkaError]:
        return await self._retrying(tops.describe_transactions, transactional_ids)

    async def describe_producers(self, partitions: Iterable[ops.TopicPartition],
                                 broker_id: int | None = None
                                 ) -> dict[ops.TopicPartition, Any]:
        """{partition: [ProducerState] or KafkaError}, from the leaders (or ``broker_id``)."""
        return await self._retrying(tops.describe_producers, partitions, broker_id)

    async def abort_transaction(self, spec: tops.AbortTransactionSpec) -> None:
        await self._retrying(tops.abort_transaction, spec)
    async def create_acls(self, bindings: Iterable[acls.AclBinding]) -> None:
        await self._retrying(acls.create_acls, bindings)

    async def describe_acls(self, acl_filter: acls.AclBindingFilter) -> list[acls.AclBinding]:
        return await self._retrying(acls.describe_acls, acl_filter)

    async def delete_acls(self, filters: Iterable[acls.AclBindingFilter]
                          ) -> list[acls.AclBinding]:
        return await self._retrying(acls.delete_acls, filters)

    async def alter_partition_reassignments(
            self, targets: Mapping[ops.TopicPartition, Sequence[int] | None],
            timeout_ms: int = reassign_ops.DEFAULT_REASSIGNMENT_TIMEOUT_MS
    ) -> list[reassign_ops.ReassignmentResult]:
        return await self._run(reassign_ops.alter_partition_reassignments(targets, timeout_ms))

    async def list_partition_reassignments(
            self, partitions: Iterable[ops.TopicPartition] | None = None,
            timeout_ms: int = reassign_ops.DEFAULT_REASSIGNMENT_TIMEOUT_MS
    ) -> list[reassign_ops.OngoingReassignment]:
        return await self._run(reassign_ops.list_partition_reassignments(partitions, timeout_ms))

    async def describe_broker_configs(self, broker_id: int | None,
                                      keys: Iterable[str] | None = None
                                      ) -> dict[str, ops.ConfigEntry]:
        """Configs of broker `broker_id`, or of the cluster-wide default for None."""
        return await self._run(bcops.describe_broker_configs(broker_id, keys))

    async def incremental_alter_broker_configs(self, broker_id: int | None,
                                               changes: Mapping[str, str | None]) -> None:
        """Set (value) or delete (None) dynamic configs of a broker or the cluster default."""
        await self._run(bcops.incremental_alter_broker_configs(broker_id, changes))

    async def list_groups_offsets(self, groups: Iterable[str]
                                  ) -> dict[str, dict[ops.TopicPartition, int] | KafkaError]:
        """Many groups' committed offsets: one FindCoordinator and one OffsetFetch per
        coordinator; a group's failure is its value."""
        return await self._run(batch_gops.list_groups_offsets(groups))

    async def describe_client_quotas(
            self, components: Iterable[quota_ops.QuotaFilterComponent] = (),
            strict: bool = False) -> dict[quota_ops.QuotaEntity, dict[str, float]]:
        return await self._run(quota_ops.describe_client_quotas(components, strict))

    async def alter_client_quotas(
            self, alterations: Iterable[tuple[Mapping[str, str | None],
                                              Mapping[str, float | None]]],
            validate_only: bool = False) -> list[quota_ops.QuotaAlterationResult]:
        return await self._run(quota_ops.alter_client_quotas(alterations, validate_only))

    async def describe_topic_partitions(
            self, names: Iterable[str] = (), partition_limit: int = 2000
    ) -> dict[str, tp_ops.TopicPartitionsDescription]:
        return await self._run(tp_ops.describe_topic_partitions(names, partition_limit))

    async def _run(self, operation: ops.Operation) -> Any:
        """Run a started operation once; its calls are retried (see ``_retrying``)."""
        return await self._retrying(operation)

    async def _retrying(self, operation: ops.Operation | Callable[..., ops.Operation],
                        *args: Any) -> Any:
        """Run an operation until it returns or `default.api.timeout.ms` passes. Given as
        a generator function and its arguments, it starts over after a retriable failure
        (a moved controller or coordinator); a generator runs once, its calls retried."""
        start = retries.starter(operation, args)
        budget = RetryBudget(trio.current_time() + self.config.default_api_timeout_ms / 1000)
        while True:
            try:
                return await self._drive(start(), budget)
            except (KafkaError, KafkaConnectionError) as exc:
                if not (callable(operation) and retries.should_retry(exc)):
                    raise
                wait = budget.next_wait(trio.current_time())
                if wait is None:
                    raise budget.exhausted(exc) from None
                self._unreachable.failed(exc, trio.current_time())
                self._cluster = None
                await trio.sleep(wait)

    async def _drive(self, operation: ops.Operation, budget: RetryBudget) -> Any:
        try:
            call = next(operation)
        except StopIteration as stop:  # nothing to ask (e.g. describing no groups)
            return stop.value
        while True:
            response = await self._call_retrying(call, budget)
            try:
                call = operation.send(response)
            except StopIteration as stop:
                return stop.value

    async def _call_retrying(self, call: ops.Call, budget: RetryBudget) -> dict[str, Any]:
        """`_call`, repeated after a routing error or a lost broker while time is left."""
        while True:
            try:
                return await self._call(call)
            except (retries.RetryCall, KafkaConnectionError) as exc:
                if isinstance(exc, KafkaConnectionError) and (
                        call.node_id is not None or not retries.should_retry(exc)):
                    raise  # the addressed broker is gone: the operation looks again
                wait = budget.next_wait(trio.current_time())
                if wait is None:
                    raise budget.exhausted(retries.failure_of(exc)) from None
                self._unreachable.failed(exc, trio.current_time())
                self._cluster = None
                await trio.sleep(wait)

    async def _call(self, call: ops.Call) -> dict[str, Any]:
        failed: set[int] = set()
        for attempt in (1, 2):
            if self._cluster is None or not self._cluster.brokers:
                response = await self._pool.request_any(ApiKey.METADATA, metadata_request([]))
                self._cluster = ClusterMetadata.from_response(response)
            node = pick_target(self._cluster, call,
                                self._pool.connected_addresses(), failed)
            try:
                conn = await self._pool.connection(node)
                version = conn.pick_version(call.api_key)
                response = await self._pool.request(node, call.api_key, call.build(version),
                                                    version)
                self._unreachable.succeeded()
                return retries.accepted(call, response)
            except KafkaConnectionError as exc:
                self._cluster = None
                failed.add(node.node_id)
                if attempt == 2 or isinstance(exc, FatalConnectionError):
                    raise
        raise AssertionError("unreachable")
