"""The connector's requests to a cluster: metadata, offset lookups, offset commits and
fetches, over the project's blocking connections (one request at a time, no threads)."""

from __future__ import annotations

import logging
import time
from typing import Any, Iterable, Mapping

from clients.common.cluster import BrokerNode, ClusterMetadata, metadata_request
from clients.common.connections import BlockingConnectionPool
from clients.consumer.group.membership import FIND_COORDINATOR_VERSION, coordinator_from
from clients.consumer.group.offsets import offset_commit_errors, offset_commit_request
from clients.net import KafkaConnectionError, parse_bootstrap_servers
from clients.protocol import ApiKey, ErrorCode, KafkaError, ProtocolError
from clients.spark.offsets import PartitionOffsets, TopicPartition
from clients.spark.options import SparkOptionError, TopicSelection
from clients.spark.security import connection_security

logger = logging.getLogger(__name__)

_TRANSIENT = (KafkaConnectionError, ProtocolError, OSError)


class ClusterClient:
    """Blocking requests to one cluster. ``retries``/``retry_interval_ms`` bound how often
    an offset lookup is retried after a transient failure (fetchOffset.* options)."""

    def __init__(self, kafka: Mapping[str, str], read_committed: bool = False,
                 retries: int = 3, retry_interval_ms: int = 10) -> None:
        try:
            servers = parse_bootstrap_servers(kafka["bootstrap.servers"])
        except ValueError as exc:
            raise SparkOptionError(f"option 'kafka.bootstrap.servers' is invalid: {exc}") from None
        timeout_s = int(kafka.get("request.timeout.ms", "30000")) / 1000
        self.client_id = kafka.get("client.id", "raftka-spark")
        self.isolation_level = 1 if read_committed else 0
        self.retries = retries
        self.retry_interval_s = retry_interval_ms / 1000
        security = connection_security(kafka)
        self._pool = BlockingConnectionPool(servers, self.client_id, timeout_s,
                                            security.transport, security.sasl)
        self.cluster = ClusterMetadata()

    def close(self) -> None:
        self._pool.close()

    # ---- metadata ----

    def refresh(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        """Metadata for ``topics`` (None: every topic), merged into ``self.cluster``."""
        body = metadata_request(None if topics is None else sorted(set(topics)))
        response = self._pool.request_any(ApiKey.METADATA, body, self.cluster.brokers.values())
        fresh = ClusterMetadata.from_response(response)
        self.cluster = fresh if topics is None else self.cluster.merged_with(fresh)
        return fresh

    def partitions(self, selection: TopicSelection) -> list[TopicPartition]:
        """The partitions a subscription covers now (assign: those given that exist)."""
        if selection.kind == "subscribe":
            fresh = self.refresh(selection.topics)
        elif selection.kind == "assign":
            fresh = self.refresh({t for t, _ in selection.partitions})
        else:
            fresh = self.refresh(None)
        if selection.kind != "subscribePattern":
            # Named topics the principal may not describe fail the query, as Kafka's
            # clients raise TopicAuthorizationException (a pattern never lists them).
            denied = sorted(name for name, info in fresh.topics.items()
                            if info.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            if denied:
                raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                 f"Not authorized to access topics: [{', '.join(denied)}]")
        found: list[TopicPartition] = []
        for name, info in fresh.topics.items():
            if info.is_internal or info.error_code != ErrorCode.NONE:
                continue
            if not selection.matches(name):
                continue
            found.extend((name, p) for p in info.partitions)
        if selection.kind == "assign":
            found = [tp for tp in found if tp in set(selection.partitions)]
        return sorted(found)

    def leader(self, tp: TopicPartition) -> BrokerNode | None:
        node = self.cluster.leader_for(*tp)
        if node is None:
            self.refresh([tp[0]])
            node = self.cluster.leader_for(*tp)
        return node

    # ---- offsets ----

    def list_offsets(self, queries: Mapping[TopicPartition, int]) -> PartitionOffsets:
        """ListOffsets: -2 earliest, -1 latest (the LSO under read_committed), else the first
        offset at or after that timestamp (-1 when there is none)."""
        pending = dict(queries)
        found: PartitionOffsets = {}
        attempt = 0
        while pending:
            failures = self._list_offsets_once(pending, found)
            for tp in found:
                pending.pop(tp, None)
            if not pending:
                break
            attempt += 1
            if attempt > self.retries:
                raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR,
                                 f"offset lookup failed after {attempt} attempts: {failures}")
            time.sleep(self.retry_interval_s)
            self.refresh({t for t, _ in pending})
        return found

    def _list_offsets_once(self, pending: Mapping[TopicPartition, int],
                           found: PartitionOffsets) -> list[str]:
        by_node: dict[int, dict[str, list[dict[str, Any]]]] = {}
        failures: list[str] = []
        for tp, timestamp in pending.items():
            node = self.leader(tp)
            if node is None:
                failures.append(f"{tp[0]}-{tp[1]}: no leader")
                continue
            by_node.setdefault(node.node_id, {}).setdefault(tp[0], []).append(
                {"partition_index": tp[1], "timestamp": timestamp})
        for node_id, topics in by_node.items():
            body = {"replica_id": -1, "isolation_level": self.isolation_level,
                    "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
            try:
                response = self._pool.request(self.cluster.brokers[node_id],
                                              ApiKey.LIST_OFFSETS, body)
            except _TRANSIENT as exc:
                failures.append(str(exc))
                continue
            for topic in response.get("topics", ()):
                for p in topic["partitions"]:
                    tp = (topic["name"], p["partition_index"])
                    code = ErrorCode.from_code(p["error_code"])
                    if code == ErrorCode.NONE:
                        found[tp] = p["offset"]
                    elif code.retriable or code in (ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                                     ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                        failures.append(f"{tp[0]}-{tp[1]}: {code.name}")
                    else:
                        raise KafkaError(code, f"ListOffsets for {tp[0]}-{tp[1]}")
        return failures

    def earliest(self, tps: Iterable[TopicPartition]) -> PartitionOffsets:
        return self.list_offsets({tp: -2 for tp in tps})

    def latest(self, tps: Iterable[TopicPartition]) -> PartitionOffsets:
        return self.list_offsets({tp: -1 for tp in tps})

    # ---- group offsets ----

    def commit(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Store ``offsets`` (next offset to read) for ``group_id`` as a memberless commit,
        the way Kafka's admin tools write a group's offsets. Retriable errors (a coordinator
        still loading, or moving) are retried like offset lookups."""
        if not offsets:
            return
        attempt = 0
        while True:
            try:
                self._commit_once(group_id, offsets)
                return
            except KafkaError as exc:
                attempt += 1
                if not exc.code.retriable or attempt > self.retries:
                    raise
            time.sleep(max(self.retry_interval_s, 0.1))

    def _commit_once(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        response = self._pool.request_any(ApiKey.FIND_COORDINATOR,
                                          {"key": group_id, "key_type": 0},
                                          self.cluster.brokers.values(),
                                          version=FIND_COORDINATOR_VERSION)
        node, code = coordinator_from(response)
        if node is None:
            raise KafkaError(code, f"no coordinator for group {group_id}")
        request = offset_commit_request(group_id, -1, "", None, offsets)
        failed = offset_commit_errors(self._pool.request(node, ApiKey.OFFSET_COMMIT, request))
        if failed:
            (tp, code), *_ = failed.items()
            raise KafkaError(code, f"offset commit of group {group_id} failed for "
                                   f"{tp[0]}-{tp[1]}")

    # ---- fetch ----

    def fetch(self, tp: TopicPartition, offset: int, max_wait_ms: int, max_bytes: int
              ) -> dict[str, Any]:
        """One partition's Fetch answer (the partition entry), from its leader."""
        node = self.leader(tp)
        if node is None:
            return {"error_code": ErrorCode.LEADER_NOT_AVAILABLE}
        body = {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1,
                "max_bytes": max_bytes, "isolation_level": self.isolation_level,
                "session_id": 0, "session_epoch": -1,
                "topics": [{"topic": tp[0], "partitions": [{
                    "partition": tp[1], "fetch_offset": offset,
                    "partition_max_bytes": max_bytes}]}],
                "forgotten_topics_data": []}
        try:
            response = self._pool.request(node, ApiKey.FETCH, body)
        except _TRANSIENT as exc:
            logger.info("fetch of %s-%d from broker %d failed: %s", tp[0], tp[1],
                        node.node_id, exc)
            self.cluster = ClusterMetadata()
            return {"error_code": ErrorCode.NETWORK_EXCEPTION}
        if response.get("error_code", 0):
            return {"error_code": response["error_code"]}
        for topic in response.get("responses", ()):
            for p in topic["partitions"]:
                if p["partition_index"] == tp[1]:
                    return p
        return {"error_code": ErrorCode.UNKNOWN_SERVER_ERROR}
