"""Broker-to-controller RPCs: find the active controller among the voters and keep using it.

The active controller is the Raft leader. A voter that is not the leader answers controller
RPCs with NOT_CONTROLLER, and any voter can name the leader in a DescribeQuorum answer. The
channel sends to the controller it last found; on a connection failure or NOT_CONTROLLER it
forgets it, walks the voters (the DescribeQuorum leader first when a voter names one) and
retries with exponential backoff until the caller's timeout.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping

import trio

from broker.config.bind_address import source_address_for
from broker.parking import parked
from clients.net import PLAINTEXT, ClientSecurity, KafkaConnection, KafkaConnectionError
from clients.protocol import ApiKey, ErrorCode, KafkaError, ProtocolError, api_name
from metadata.topic_names import METADATA_TOPIC

logger = logging.getLogger(__name__)

METADATA_PARTITION = 0

# Kafka's controller.socket.timeout.ms, retry.backoff.ms and retry.backoff.max.ms.
DEFAULT_REQUEST_TIMEOUT_MS = 30_000
DEFAULT_RETRY_BACKOFF_MS = 100
DEFAULT_RETRY_BACKOFF_MAX_MS = 1_000

# Responses whose errors are per entry: the list field holding the entries.
_PER_ENTRY_RESULTS = {
    ApiKey.CREATE_TOPICS: "topics",
    ApiKey.DELETE_TOPICS: "responses",
    ApiKey.CREATE_PARTITIONS: "results",
    ApiKey.INCREMENTAL_ALTER_CONFIGS: "responses",
    ApiKey.ALTER_CONFIGS: "responses",
}


class ControllerUnavailableError(Exception):
    """No voter accepted the request as active controller before the timeout."""


def is_not_controller(api_key: int, response: Mapping[str, Any]) -> bool:
    """Whether ``response`` says the receiver is not the active controller.

    True for a top-level NOT_CONTROLLER, or for per-entry APIs when every entry has it.
    """
    if response.get("error_code") == ErrorCode.NOT_CONTROLLER:
        return True
    field = _PER_ENTRY_RESULTS.get(api_key)  # type: ignore[call-overload]
    entries = response.get(field) if field else None
    return bool(entries) and all(e.get("error_code") == ErrorCode.NOT_CONTROLLER
                                 for e in entries)


def leader_from_describe_quorum(response: Mapping[str, Any]) -> int | None:
    """The metadata partition's leader id from a DescribeQuorum answer, if it names one."""
    if response.get("error_code", 0) != ErrorCode.NONE:
        return None
    for topic in response.get("topics", ()):
        if topic.get("topic_name") != METADATA_TOPIC:
            continue
        for partition in topic.get("partitions", ()):
            if (partition.get("partition_index") == METADATA_PARTITION
                    and partition.get("error_code", 0) == ErrorCode.NONE
                    and partition.get("leader_id", -1) >= 0):
                return int(partition["leader_id"])
    return None


class ControllerClient:
    """Sends controller RPCs to the active controller among ``voters`` (id -> host, port).

    Use from one trio task at a time per request; concurrent ``send`` calls share the
    connection to the active controller.
    """

    def __init__(self, voters: Mapping[int, tuple[str, int]], client_id: str, *,
                 request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
                 retry_backoff_ms: int = DEFAULT_RETRY_BACKOFF_MS,
                 retry_backoff_max_ms: int = DEFAULT_RETRY_BACKOFF_MAX_MS,
                 local_address: str | None = None,
                 quorum_leader: Callable[[], int | None] | None = None,
                 security: ClientSecurity = PLAINTEXT) -> None:
        if not voters:
            raise ValueError("the controller channel needs at least one voter")
        self._voters = dict(sorted(voters.items()))
        self._client_id = client_id
        self._local_address = local_address
        # The metadata quorum's leader as this node's own Raft member sees it (Kafka's
        # channel asks the raft layer too): tried first, so an unreachable old controller
        # that swallows packets cannot eat every request's whole timeout.
        self._quorum_leader = quorum_leader
        self._security = security
        self._request_timeout_s = request_timeout_ms / 1000
        self._backoff_s = retry_backoff_ms / 1000
        self._backoff_max_s = retry_backoff_max_ms / 1000
        self._active_id: int | None = None
        self._leader_hint: int | None = None
        # Voters that last timed out or refused a connection: walked last, so a cut-off
        # old controller does not eat the next request's whole timeout too.
        self._unreachable: set[int] = set()
        self._connections: dict[int, KafkaConnection] = {}
        self._connect_locks = {node_id: trio.Lock() for node_id in self._voters}

    @property
    def active_controller_id(self) -> int | None:
        """The voter last seen accepting a request as active controller; None when unknown."""
        return self._active_id

    async def send(self, api_key: int, body: Any, timeout_ms: int) -> dict[str, Any]:
        """Send ``body`` (a dict or the API's request message) to the active controller and
        return its response.

        Retries on connection failures and NOT_CONTROLLER, finding the controller again,
        until ``timeout_ms`` passes; then raises ControllerUnavailableError. Other error
        codes are the caller's to read in the returned body.
        """
        # A request forwarded to the controller waits on another node (broker.parking).
        parked()
        deadline = trio.current_time() + timeout_ms / 1000
        backoff = self._backoff_s
        failures: dict[int, str] = {}
        while True:
            tried: set[int] = set()
            while (node_id := self._next_target(tried)) is not None:
                if trio.current_time() >= deadline:
                    break
                tried.add(node_id)
                response = await self._attempt(node_id, api_key, body, deadline, failures)
                if response is not None:
                    return response
            remaining = deadline - trio.current_time()
            if remaining <= 0:
                break
            await trio.sleep(min(backoff, remaining))
            backoff = min(backoff * 2, self._backoff_max_s)
        details = "; ".join(f"node {n}: {why}" for n, why in sorted(failures.items()))
        raise ControllerUnavailableError(
            f"no active controller accepted {api_name(api_key)} within {timeout_ms} ms"
            + (f" ({details})" if details else ""))

    async def aclose(self) -> None:
        """Close every open connection."""
        connections, self._connections = self._connections, {}
        for conn in connections.values():
            await conn.aclose()

    async def __aenter__(self) -> ControllerClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _next_target(self, tried: set[int]) -> int | None:
        """The quorum's leader, the known controller, the hinted leader, then voters in id
        order, those that last did not answer at all after the others."""
        raft_leader = self._quorum_leader() if self._quorum_leader is not None else None
        voters = sorted(self._voters, key=lambda n: n in self._unreachable)
        for candidate in (raft_leader, self._active_id, self._leader_hint, *voters):
            if candidate is not None and candidate in self._voters and candidate not in tried:
                return candidate
        return None

    async def _attempt(self, node_id: int, api_key: int, body: Any,
                       deadline: float, failures: dict[int, str]) -> dict[str, Any] | None:
        """One try at ``node_id``: its response, or None (the reason goes to ``failures``)."""
        attempt_deadline = min(deadline, trio.current_time() + self._request_timeout_s)
        timeout = max(attempt_deadline - trio.current_time(), 0.0)
        response: dict[str, Any] | None = None
        with trio.move_on_at(attempt_deadline):
            try:
                conn = await self._connection(node_id, timeout)
                if node_id != self._active_id:
                    leader = await self._ask_leader(conn, timeout)
                    if leader is not None and leader != node_id and leader in self._voters:
                        self._leader_hint = leader
                        failures[node_id] = f"names node {leader} as leader"
                        await self._forget(node_id)
                        return None
                response = await conn.request(api_key, body, timeout=timeout)
            except (KafkaConnectionError, ProtocolError, KafkaError) as exc:
                failures[node_id] = str(exc)
                if isinstance(exc, KafkaConnectionError):
                    self._unreachable.add(node_id)
                await self._forget(node_id)
                return None
        if response is None:
            failures[node_id] = f"no answer within {timeout:g} s"
            self._unreachable.add(node_id)
            await self._forget(node_id)
            return None
        self._unreachable.discard(node_id)
        if is_not_controller(api_key, response):
            failures[node_id] = "NOT_CONTROLLER"
            await self._forget(node_id)
            return None
        if self._active_id != node_id:
            logger.info("active controller is node %d", node_id)
        self._active_id = node_id
        self._leader_hint = None
        return response

    async def _ask_leader(self, conn: KafkaConnection, timeout: float) -> int | None:
        """The leader a voter names through DescribeQuorum, when it serves that API."""
        if not conn.supports(ApiKey.DESCRIBE_QUORUM):
            return None
        body = {"topics": [{"topic_name": METADATA_TOPIC,
                            "partitions": [{"partition_index": METADATA_PARTITION}]}]}
        response = await conn.request(ApiKey.DESCRIBE_QUORUM, body, timeout=timeout)
        return leader_from_describe_quorum(response)

    async def _connection(self, node_id: int, timeout: float) -> KafkaConnection:
        async with self._connect_locks[node_id]:
            conn = self._connections.get(node_id)
            if conn is None or conn.closed:
                host, port = self._voters[node_id]
                conn = await KafkaConnection.connect(host, port, client_id=self._client_id,
                                                     timeout=timeout, security=self._security,
                                                     local_address=source_address_for(
                                                         self._local_address, host))
                self._connections[node_id] = conn
            return conn

    async def _forget(self, node_id: int) -> None:
        """Drop a node as controller (and its connection) after it failed or refused."""
        if self._active_id == node_id:
            logger.info("node %d is no longer reachable as active controller", node_id)
            self._active_id = None
        if self._leader_hint == node_id:
            self._leader_hint = None
        conn = self._connections.pop(node_id, None)
        if conn is not None:
            await conn.aclose()
