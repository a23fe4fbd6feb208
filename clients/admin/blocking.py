"""The blocking admin client: ``Admin``'s methods over blocking connections."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from typing import Any, Iterable, Mapping, Sequence

from clients.admin import cluster_operations as cops
from clients.admin import acl_operations as acls
from clients.admin import broker_config_operations as bcops
from clients.admin import group_operations as gops
from clients.admin import operations as ops
from clients.admin import retries
from clients.admin import transaction_operations as tops
from clients.common.cluster import BrokerNode, ClusterMetadata, metadata_request
from clients.common.connections import BlockingConnectionPool
from clients.admin.retries import RetryBudget
from clients.admin import scram_operations as scram_ops
from clients.admin import group_batch_operations as batch_gops
from clients.admin import reassignment_operations as reassign_ops
from clients.admin import quota_operations as quota_ops
from clients.admin import topic_partitions_operations as tp_ops
from clients.net import FatalConnectionError, KafkaConnectionError
from clients.net.failure_log import UnreachableNotice
from clients.protocol import ApiKey, ErrorCode, KafkaError
from clients.admin.admin_config import AdminConfig, pick_target

logger = logging.getLogger(__name__)


class BlockingAdmin:
    """The blocking admin client, with the same methods as ``Admin``."""

    def __init__(self, config: AdminConfig | Mapping[str, Any] | None = None,
                 **overrides: Any) -> None:
        if not isinstance(config, AdminConfig):
            config = AdminConfig.from_mapping(config, **overrides)
        self.config = config
        self._pool = BlockingConnectionPool(config.bootstrap_servers, config.client_id,
                                            config.request_timeout_ms / 1000,
                                            security=config.security, sasl=config.sasl)
        self._unreachable = UnreachableNotice(logger, f"default.api.timeout.ms "
                                              f"({config.default_api_timeout_ms} ms) runs out")
        self._cluster: ClusterMetadata | None = None

    def __enter__(self) -> BlockingAdmin:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._pool.close()

    def create_topics(self, topics: Iterable[ops.NewTopic], validate_only: bool = False
                      ) -> dict[str, uuid.UUID]:
        return self._retrying(ops.create_topics, topics, validate_only)

    def delete_topics(self, names: Iterable[str]) -> None:
        self._retrying(ops.delete_topics, names)

    def list_topics(self, include_internal: bool = False) -> list[str]:
        return self._retrying(ops.list_topics, include_internal)

    def describe_topics(self, names: Iterable[str] | None = None
                        ) -> list[ops.TopicDescription]:
        return self._retrying(ops.describe_topics, names)

    def create_partitions(self, new_totals: Mapping[str, int],
                          validate_only: bool = False) -> None:
        self._retrying(ops.create_partitions, new_totals, validate_only)

    def elect_leaders(self, election_type: int,
                      partitions: Iterable[ops.TopicPartition] | None = None
                      ) -> list[cops.ElectionResult]:
        """ElectLeaders (cluster_operations.PREFERRED or UNCLEAN) for `partitions` (None:
        all); Kafka's per-partition outcomes."""
        return self._retrying(cops.elect_leaders, election_type, partitions)

    def describe_log_dirs(self, broker_id: int, topics: Iterable[str] | None = None
                          ) -> list[cops.LogDirDescription]:
        """Broker `broker_id`'s log directories and the replicas in each."""
        return self._retrying(cops.describe_log_dirs, broker_id, topics)

    def unregister_broker(self, broker_id: int) -> None:
        """Remove broker `broker_id`, gone for good, from the cluster (UnregisterBroker)."""
        self._retrying(cops.unregister_broker, broker_id)

    def describe_configs(self, topic: str, keys: Iterable[str] | None = None
                         ) -> dict[str, ops.ConfigEntry]:
        return self._retrying(ops.describe_configs, topic, ops.TOPIC_RESOURCE, keys)

    def incremental_alter_configs(self, topic: str, changes: Mapping[str, str | None],
                                  validate_only: bool = False) -> None:
        self._retrying(ops.incremental_alter_configs, topic, changes, ops.TOPIC_RESOURCE,
                       validate_only)

    def describe_cluster(self) -> ops.ClusterDescription:
        return self._retrying(ops.describe_cluster)

    def delete_groups(self, group_ids: Iterable[str]) -> None:
        self._retrying(gops.delete_groups, group_ids)

    def alter_group_offsets(self, group_id: str,
                            offsets: Mapping[ops.TopicPartition, int]) -> None:
        self._retrying(gops.alter_group_offsets, group_id, offsets)

    def delete_group_offsets(self, group_id: str,
                             partitions: Iterable[ops.TopicPartition]) -> None:
        self._retrying(gops.delete_group_offsets, group_id, partitions)

    def delete_group_offsets_each(self, group_id: str,
                                  partitions: Iterable[ops.TopicPartition]
                                  ) -> dict[ops.TopicPartition, ErrorCode]:
        return self._retrying(gops.delete_group_offsets_each, group_id, partitions)

    def list_offsets(self, timestamps: Mapping[ops.TopicPartition, int],
                     isolation_level: int = 0) -> dict[ops.TopicPartition, Any]:
        return self._retrying(ops.list_offsets, timestamps, isolation_level)

    def upsert_scram_credential(self, user: str, mechanism: str, password: str,
                                iterations: int = scram_ops.DEFAULT_ITERATIONS) -> None:
        self._retrying(scram_ops.upsert_scram_credential, user, mechanism, password, iterations)

    def delete_scram_credential(self, user: str, mechanism: str) -> None:
        self._retrying(scram_ops.delete_scram_credential, user, mechanism)

    def describe_scram_credentials(self, users: Iterable[str] | None = None
                                   ) -> dict[str, list[tuple[str, int]]]:
        return self._retrying(scram_ops.describe_scram_credentials, users)

    def delete_records(self, before: Mapping[ops.TopicPartition, int]
                       ) -> dict[ops.TopicPartition, int | KafkaError]:
        return self._retrying(ops.delete_records, before)

    def broker_versions(self) -> dict[int, tuple[BrokerNode, dict[int, tuple[int, int]]]]:
        """Each broker's (node, {api key: (min, max)}) from its ApiVersions answer."""
        cluster: ClusterMetadata = self._retrying(ops.metadata, [])
        out: dict[int, tuple[BrokerNode, dict[int, tuple[int, int]]]] = {}
        for node_id in sorted(cluster.brokers):
            node = cluster.brokers[node_id]
            out[node_id] = (node, dict(self._pool.connection(node).broker_versions))
        return out

    def list_groups(self) -> list[gops.GroupListing]:
        return self._retrying(gops.list_groups)

    def describe_groups(self, groups: Iterable[str]
                        ) -> dict[str, gops.GroupDescription | KafkaError]:
        return self._retrying(gops.describe_groups, groups)

    def list_group_offsets(self, group: str) -> dict[ops.TopicPartition, int]:
        return self._retrying(gops.list_group_offsets, group)

    def describe_quorum(self) -> gops.QuorumInfo:
        return self._retrying(gops.describe_quorum)

    def list_transactions(self, state_filters: Iterable[str] = (),
                          producer_id_filters: Iterable[int] = (),
                          duration_filter_ms: int = -1) -> list[tops.TransactionListing]:
        return self._retrying(tops.list_transactions, state_filters, producer_id_filters,
                              duration_filter_ms)

    def describe_transactions(self, transactional_ids: Iterable[str]
                              ) -> dict[str, tops.TransactionDescription | KafkaError]:
        return self._retrying(tops.describe_transactions, transactional_ids)

    def describe_producers(self, partitions: Iterable[ops.TopicPartition],
                           broker_id: int | None = None) -> dict[ops.TopicPartition, Any]:
        return self._retrying(tops.describe_producers, partitions, broker_id)

    def abort_transaction(self, spec: tops.AbortTransactionSpec) -> None:
        self._retrying(tops.abort_transaction, spec)

    def partitions_on_broker(self, broker_id: int) -> list[ops.TopicPartition]:
        return self._retrying(tops.partitions_on_broker, broker_id)
    def create_acls(self, bindings: Iterable[acls.AclBinding]) -> None:
        self._retrying(acls.create_acls, bindings)

    def describe_acls(self, acl_filter: acls.AclBindingFilter) -> list[acls.AclBinding]:
        return self._retrying(acls.describe_acls, acl_filter)

    def delete_acls(self, filters: Iterable[acls.AclBindingFilter]) -> list[acls.AclBinding]:
        return self._retrying(acls.delete_acls, filters)

    def alter_partition_reassignments(
            self, targets: Mapping[ops.TopicPartition, Sequence[int] | None],
            timeout_ms: int = reassign_ops.DEFAULT_REASSIGNMENT_TIMEOUT_MS
    ) -> list[reassign_ops.ReassignmentResult]:
        """Start (a target replica list) or cancel (None) each partition's reassignment;
        per-partition results, errors included."""
        return self._run(reassign_ops.alter_partition_reassignments(targets, timeout_ms))

    def list_partition_reassignments(
            self, partitions: Iterable[ops.TopicPartition] | None = None,
            timeout_ms: int = reassign_ops.DEFAULT_REASSIGNMENT_TIMEOUT_MS
    ) -> list[reassign_ops.OngoingReassignment]:
        """The reassignments in progress, of `partitions` (None: all)."""
        return self._run(reassign_ops.list_partition_reassignments(partitions, timeout_ms))

    def describe_broker_configs(self, broker_id: int | None,
                                keys: Iterable[str] | None = None) -> dict[str, ops.ConfigEntry]:
        """Configs of broker `broker_id`, or of the cluster-wide default for None."""
        return self._run(bcops.describe_broker_configs(broker_id, keys))

    def incremental_alter_broker_configs(self, broker_id: int | None,
                                         changes: Mapping[str, str | None]) -> None:
        """Set (value) or delete (None) dynamic configs of a broker or the cluster default."""
        self._run(bcops.incremental_alter_broker_configs(broker_id, changes))

    def list_groups_offsets(self, groups: Iterable[str]
                            ) -> dict[str, dict[ops.TopicPartition, int] | KafkaError]:
        """Many groups' committed offsets; a group's failure is its value."""
        return self._run(batch_gops.list_groups_offsets(groups))

    def describe_client_quotas(
            self, components: Iterable[quota_ops.QuotaFilterComponent] = (),
            strict: bool = False) -> dict[quota_ops.QuotaEntity, dict[str, float]]:
        return self._run(quota_ops.describe_client_quotas(components, strict))

    def alter_client_quotas(
            self, alterations: Iterable[tuple[Mapping[str, str | None],
                                              Mapping[str, float | None]]],
            validate_only: bool = False) -> list[quota_ops.QuotaAlterationResult]:
        return self._run(quota_ops.alter_client_quotas(alterations, validate_only))

    def describe_topic_partitions(self, names: Iterable[str] = (), partition_limit: int = 2000
                                  ) -> dict[str, tp_ops.TopicPartitionsDescription]:
        return self._run(tp_ops.describe_topic_partitions(names, partition_limit))

    def _run(self, operation: ops.Operation) -> Any:
        """Run a started operation once; its calls are retried (see ``_retrying``)."""
        return self._retrying(operation)

    def _retrying(self, operation: ops.Operation | Callable[..., ops.Operation],
                  *args: Any) -> Any:
        """As ``Admin._retrying``."""
        start = retries.starter(operation, args)
        budget = RetryBudget(time.monotonic() + self.config.default_api_timeout_ms / 1000)
        while True:
            try:
                return self._drive(start(), budget)
            except (KafkaError, KafkaConnectionError) as exc:
                if not (callable(operation) and retries.should_retry(exc)):
                    raise
                wait = budget.next_wait(time.monotonic())
                if wait is None:
                    raise budget.exhausted(exc) from None
                self._unreachable.failed(exc, time.monotonic())
                self._cluster = None
                time.sleep(wait)

    def _drive(self, operation: ops.Operation, budget: RetryBudget) -> Any:
        try:
            call = next(operation)
        except StopIteration as stop:  # nothing to ask (e.g. describing no groups)
            return stop.value
        while True:
            response = self._call_retrying(call, budget)
            try:
                call = operation.send(response)
            except StopIteration as stop:
                return stop.value

    def _call_retrying(self, call: ops.Call, budget: RetryBudget) -> dict[str, Any]:
        while True:
            try:
                return self._call(call)
            except (retries.RetryCall, KafkaConnectionError) as exc:
                if isinstance(exc, KafkaConnectionError) and (
                        call.node_id is not None or not retries.should_retry(exc)):
                    raise
                wait = budget.next_wait(time.monotonic())
                if wait is None:
                    raise budget.exhausted(retries.failure_of(exc)) from None
                self._unreachable.failed(exc, time.monotonic())
                self._cluster = None
                time.sleep(wait)

    def _call(self, call: ops.Call) -> dict[str, Any]:
        failed: set[int] = set()
        for attempt in (1, 2):
            if self._cluster is None or not self._cluster.brokers:
                response = self._pool.request_any(ApiKey.METADATA, metadata_request([]))
                self._cluster = ClusterMetadata.from_response(response)
            node = pick_target(self._cluster, call,
                                self._pool.connected_addresses(), failed)
            try:
                conn = self._pool.connection(node)
                version = conn.pick_version(call.api_key)
                response = self._pool.request(node, call.api_key, call.build(version), version)
                self._unreachable.succeeded()
                return retries.accepted(call, response)
            except KafkaConnectionError as exc:
                self._cluster = None
                failed.add(node.node_id)
                if attempt == 2 or isinstance(exc, FatalConnectionError):
                    raise
        raise AssertionError("unreachable")
