"""QuorumController: the controller role of a voter node, in one unit: its RPC handlers
(each hands the request to its pure decision in `metadata.controller`), the commit of the
decisions' records, and its periodic work (leadership watch, broker fencing, leader
rebalance).

The Raft leader is the active controller once it is ready (it has applied an entry of its
own term, so its image holds every earlier commit). Decisions run one at a time under a trio
lock against the latest applied image; their records are committed through the quorum and
applied locally before the response leaves, as Kafka's QuorumController does.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar

import trio

from broker.apis.acls import ACL_MUTATION_ERRORS
from broker.apis.admin import ADMIN_ERRORS, describe_quorum_error
from broker.apis.api_versions import install_api_versions
from broker.apis.controller_rpcs import CONTROLLER_RPC_ERRORS
from broker.apis.metadata import describe_cluster_error
from broker.apis.request import DecodedRequest, ErrorBody, RequestContext, RequestRouter
from broker.apis.scram import DescribeScramHandler
from broker.apis.client_quotas import DescribeClientQuotasHandler
from broker.controller_server.describe_quorum import (
    CaughtUpTimes,
    ControllerEndpoint,
    describe_cluster_response,
    describe_quorum_response,
)
from clients.protocol import ApiKey, ErrorCode
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
from clients.protocol.messages.describe_quorum import (
    DescribeQuorumRequestData,
    DescribeQuorumResponseData,
)
from clients.protocol.messages.unregister_broker import UnregisterBrokerResponseData
from clients.protocol.messages.describe_cluster import (
    DescribeClusterRequestData,
    DescribeClusterResponseData,
)
from clients.protocol.messages.alter_client_quotas import AlterClientQuotasResponseData
from clients.protocol.messages.alter_configs import AlterConfigsResponseData
from clients.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsResponseData,
)
from clients.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsResponseData,
)
from clients.protocol.messages.create_acls import CreateAclsResponseData
from clients.protocol.messages.create_partitions import CreatePartitionsResponseData
from clients.protocol.messages.create_topics import CreateTopicsResponseData
from clients.protocol.messages.delete_acls import DeleteAclsResponseData
from clients.protocol.messages.delete_topics import DeleteTopicsResponseData
from clients.protocol.messages.elect_leaders import ElectLeadersResponseData
from clients.protocol.messages.incremental_alter_configs import IncrementalAlterConfigsResponseData
from clients.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsResponseData,
)
from kraft.errors import CommandApplyError, NotLeaderError, QuorumError, QuorumTimeoutError
from kraft.metadata_state_machine import MetadataStateMachine
from kraft.quorum import RaftQuorum
from kraft.status import QuorumStatus
from metadata.controller.acls import create_acls, delete_acls
from metadata.controller.alter_partition import alter_partition
from broker.bootstrap_records import read_bootstrap_records
from metadata.controller.brokers import (
    broker_heartbeat,
    fence_expired_brokers,
    register_broker,
    unregister_broker,
)
from metadata.controller.configs import incremental_alter_configs, legacy_alter_configs
from metadata.controller.leader_election import elect_leaders, rebalance_changes
from metadata.controller.reassignments import (
    alter_partition_reassignments,
    list_partition_reassignments,
)
from metadata.controller.scram import alter_user_scram_credentials
from metadata.controller.client_quotas import alter_client_quotas
from metadata.controller.partitions import create_partitions
from metadata.controller.producer_ids import allocate_producer_ids
from metadata.controller.topics import create_topics, delete_topics
from metadata.delta import MetadataDelta
from metadata.heartbeats import BrokerHeartbeatTracker
from metadata.image import MetadataImage
from metadata.record_codec import encode_record
from metadata.records import MetadataRecord
from metadata.settings import ControllerSettings

if TYPE_CHECKING:
    from broker.config import ServerConfig

logger = logging.getLogger(__name__)

R = TypeVar("R")
# (image, now_ms) -> (records to commit, result); runs with the heartbeat tracker locked.
Decide = Callable[[MetadataImage, int], tuple[list[MetadataRecord], R]]
# The error answers of the CONTROLLER listener's mutating RPCs (defined in the request layer).
CONTROLLER_ERRORS: dict[int, ErrorBody] = {**ADMIN_ERRORS, **CONTROLLER_RPC_ERRORS,
                                           **ACL_MUTATION_ERRORS}


class _LockedTracker:
    """Feeds the heartbeat tracker from the Raft thread under the lock the trio side uses."""

    def __init__(self, tracker: BrokerHeartbeatTracker, lock: threading.Lock) -> None:
        self._tracker = tracker
        self._lock = lock

    def on_metadata_update(self, delta: MetadataDelta, new_image: MetadataImage) -> None:
        with self._lock:
            self._tracker.on_metadata_update(delta, new_image)


def controller_endpoints(config: "ServerConfig | None") -> dict[int, ControllerEndpoint]:
    """Each voter's CONTROLLER listener (the first of `controller.listener.names`)."""
    if config is None or not config.controller_listener_names:
        return {}
    name = config.controller_listener_names[0]
    return {node_id: ControllerEndpoint(name, host, port)
            for node_id, (host, port) in config.voters.items()}


class QuorumController:
    """Serves controller RPCs on a voter; only the active controller makes decisions.

    Build it before `quorum.start()`: it subscribes the heartbeat tracker to `state`, which
    should see every batch the quorum replays (registration offsets).
    """

    def __init__(self, node_id: int, quorum: RaftQuorum, state: MetadataStateMachine,
                 settings: ControllerSettings, *, cluster_id: str,
                 config: "ServerConfig | None" = None,
                 clock: Callable[[], float] = time.time,
                 rng: random.Random | None = None,
                 endpoints: Mapping[int, ControllerEndpoint] | None = None,
                 append_timeout_ms: int | None = None,
                 leadership_poll_interval_s: float = 0.1,
                 fence_check_interval_s: float = 0.5) -> None:
        self.node_id = node_id
        self.quorum = quorum
        self.state = state
        if settings.cluster_id != cluster_id:
            settings = dataclasses.replace(settings, cluster_id=cluster_id)
        self.settings = settings
        self.cluster_id = cluster_id
        self.config = config
        self.clock = clock
        self.rng = rng if rng is not None else random.Random()
        self.endpoints: dict[int, ControllerEndpoint] = (
            dict(endpoints) if endpoints is not None else controller_endpoints(config))
        # None: the quorum's controller.quorum.request.timeout.ms.
        self.append_timeout_ms = append_timeout_ms
        self.leadership_poll_interval_s = leadership_poll_interval_s
        # Checking at least every twentieth of the session keeps the fencing delay (and the
        # produce gap after a broker dies) within 5% of broker.session.timeout.ms.
        self.fence_check_interval_s = min(fence_check_interval_s,
                                          settings.broker_session_timeout_ms / 1000 / 20)
        self.tracker = BrokerHeartbeatTracker()
        # Decisions touch the tracker on the trio thread while the Raft thread feeds it.
        self._tracker_lock = threading.Lock()
        self._decision_lock = trio.Lock()
        self._active_epoch: int | None = None
        # The last other voter seen leading: its broker's session, when this node takes
        # over, starts when that voter was last heard from (see `_start_sessions`).
        self._previous_leader: int | None = None
        self._caught_up = CaughtUpTimes()
        # Committed with the first decision while the metadata log is empty.
        self.bootstrap_records: list[MetadataRecord] = (
            read_bootstrap_records(config.metadata_log_dir) if config is not None else [])
        state.add_publisher(_LockedTracker(self.tracker, self._tracker_lock))

    # -- the CONTROLLER listener's handlers ----------------------------------------------------

    def register(self, router: RequestRouter) -> None:
        """Install the CONTROLLER listener's APIs (controller RPCs, DescribeQuorum,
        DescribeCluster, DescribeUserScramCredentials and ApiVersions) on `router`."""
        for api_key, handler in (
                (ApiKey.BROKER_REGISTRATION, self.handle_broker_registration),
                (ApiKey.BROKER_HEARTBEAT, self.handle_broker_heartbeat),
                (ApiKey.ALTER_PARTITION, self.handle_alter_partition),
                (ApiKey.CREATE_TOPICS, self.handle_create_topics),
                (ApiKey.DELETE_TOPICS, self.handle_delete_topics),
                (ApiKey.CREATE_PARTITIONS, self.handle_create_partitions),
                (ApiKey.ELECT_LEADERS, self.handle_elect_leaders),
                (ApiKey.UNREGISTER_BROKER, self.handle_unregister_broker),
                (ApiKey.INCREMENTAL_ALTER_CONFIGS, self.handle_incremental_alter_configs),
                (ApiKey.ALTER_CONFIGS, self.handle_alter_configs),
                (ApiKey.ALLOCATE_PRODUCER_IDS, self.handle_allocate_producer_ids),
                (ApiKey.CREATE_ACLS, self.handle_create_acls),
                (ApiKey.DELETE_ACLS, self.handle_delete_acls),
                (ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
                 self.handle_alter_user_scram_credentials),
                (ApiKey.ALTER_PARTITION_REASSIGNMENTS,
                 self.handle_alter_partition_reassignments),
                (ApiKey.LIST_PARTITION_REASSIGNMENTS,
                 self.handle_list_partition_reassignments),
                (ApiKey.ALTER_CLIENT_QUOTAS, self.handle_alter_client_quotas)):
            router.register(api_key, handler, CONTROLLER_ERRORS[api_key])
        router.register(ApiKey.DESCRIBE_QUORUM, self.handle_describe_quorum,
                        describe_quorum_error)
        router.register(ApiKey.DESCRIBE_CLUSTER, self.handle_describe_cluster,
                        describe_cluster_error)
        DescribeScramHandler(lambda: self.state.image).register(router)
        DescribeClientQuotasHandler(lambda: self.state.image).register(router)
        install_api_versions(router)

    async def handle_broker_registration(self, request: DecodedRequest,
                                         ctx: RequestContext) -> BrokerRegistrationResponseData:
        body: BrokerRegistrationRequestData = request.body
        return await self.submit(request, lambda image, now: register_broker(
            image, body, now, self.tracker, self.settings))

    async def handle_broker_heartbeat(self, request: DecodedRequest,
                                      ctx: RequestContext) -> BrokerHeartbeatResponseData:
        body: BrokerHeartbeatRequestData = request.body
        return await self.submit(request, lambda image, now: broker_heartbeat(
            image, body, now, self.tracker, self.settings))

    async def handle_alter_partition(self, request: DecodedRequest,
                                     ctx: RequestContext) -> AlterPartitionResponseData:
        body: AlterPartitionRequestData = request.body
        return await self.submit(request, lambda image, now: alter_partition(image, body, now))

    async def handle_create_topics(self, request: DecodedRequest,
                                   ctx: RequestContext) -> CreateTopicsResponseData:
        body = request.body
        return await self.submit(request, lambda image, now: create_topics(
            image, body, now, rng=self.rng, settings=self.settings))

    async def handle_delete_topics(self, request: DecodedRequest,
                                   ctx: RequestContext) -> DeleteTopicsResponseData:
        body = request.body
        return await self.submit(request, lambda image, now: delete_topics(
            image, body, now, settings=self.settings))

    async def handle_create_partitions(self, request: DecodedRequest,
                                       ctx: RequestContext) -> CreatePartitionsResponseData:
        body = request.body
        return await self.submit(request, lambda image, now: create_partitions(
            image, body, now, rng=self.rng))

    async def handle_elect_leaders(self, request: DecodedRequest,
                                   ctx: RequestContext) -> ElectLeadersResponseData:
        body = request.body
        return await self.submit(request, lambda image, now: elect_leaders(image, body, now))

    async def handle_unregister_broker(self, request: DecodedRequest,
                                       ctx: RequestContext) -> UnregisterBrokerResponseData:
        broker_id = request.body.broker_id

        def decide(image: MetadataImage, now_ms: int
                   ) -> tuple[list[MetadataRecord], UnregisterBrokerResponseData]:
            records, code = unregister_broker(image, broker_id, self.settings)
            if code == ErrorCode.NONE:
                logger.info("unregistering broker %d", broker_id)
            message = None if code == ErrorCode.NONE else (
                f"Broker {broker_id} is not registered.")
            return records, UnregisterBrokerResponseData(error_code=code, error_message=message)

        return await self.submit(request, decide)

    async def handle_incremental_alter_configs(self, request: DecodedRequest,
                                               ctx: RequestContext
                                           ) -> IncrementalAlterConfigsResponseData:
        body = request.body
        return await self.submit(request, lambda image, now: incremental_alter_configs(
            image, body, now, settings=self.settings))

    async def handle_alter_configs(self, request: DecodedRequest,
                                   ctx: RequestContext) -> AlterConfigsResponseData:
        body = request.body
        return await self.submit(request, lambda image, now: legacy_alter_configs(
            image, body, now, settings=self.settings))

    async def handle_alter_user_scram_credentials(self, request: DecodedRequest,
                                                  ctx: RequestContext
                                              ) -> AlterUserScramCredentialsResponseData:
        return await self.submit(request, lambda image, now: alter_user_scram_credentials(
            image, request.body, now))

    async def handle_alter_partition_reassignments(self, request: DecodedRequest,
                                                   ctx: RequestContext
                                               ) -> AlterPartitionReassignmentsResponseData:
        body = request.body
        return await self.submit(request, lambda image, now: alter_partition_reassignments(
            image, body, now))

    async def handle_list_partition_reassignments(self, request: DecodedRequest,
                                                  ctx: RequestContext
                                              ) -> ListPartitionReassignmentsResponseData:
        # A decision without records: answered from the active controller's latest image.
        body = request.body
        return await self.submit(request, lambda image, now: list_partition_reassignments(
            image, body, now))

    async def handle_alter_client_quotas(self, request: DecodedRequest,
                                         ctx: RequestContext) -> AlterClientQuotasResponseData:
        return await self.submit(request, lambda image, now: alter_client_quotas(
            image, request.body, now))

    async def handle_allocate_producer_ids(self, request: DecodedRequest,
                                           ctx: RequestContext
                                           ) -> AllocateProducerIdsResponseData:
        body: AllocateProducerIdsRequestData = request.body
        return await self.submit(request, lambda image, now: allocate_producer_ids(
            image, body, now, settings=self.settings))

    async def handle_create_acls(self, request: DecodedRequest,
                                 ctx: RequestContext) -> CreateAclsResponseData:
        body = request.body
        return await self.submit(request, lambda image, now: create_acls(image, body, now))

    async def handle_delete_acls(self, request: DecodedRequest,
                                 ctx: RequestContext) -> DeleteAclsResponseData:
        body = request.body
        return await self.submit(request, lambda image, now: delete_acls(image, body, now))

    async def handle_describe_quorum(self, request: DecodedRequest,
                                     ctx: RequestContext) -> DescribeQuorumResponseData:
        return self.describe_quorum(request.body, request.api_version)

    async def handle_describe_cluster(self, request: DecodedRequest,
                                      ctx: RequestContext) -> DescribeClusterResponseData:
        return self.describe_cluster(request.body, request.api_version)

    # -- background work ----------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Watch leadership, fence silent brokers and rebalance leaders until cancelled."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch_leadership)
            nursery.start_soon(self._fence_loop)
            if self.settings.auto_leader_rebalance_enable:
                nursery.start_soon(self._rebalance_loop)
            task_status.started()

    async def _watch_leadership(self) -> None:
        """Notice gaining or losing the active role promptly, even with no requests coming in."""
        while True:
            self.check_leadership()
            await trio.sleep(self.leadership_poll_interval_s)

    async def _fence_loop(self) -> None:
        """Fence brokers whose session expired (no heartbeat for broker.session.timeout.ms)."""
        while True:
            await trio.sleep(self.fence_check_interval_s)
            if self.is_active:
                fenced = await self.write(
                    "fencing expired brokers",
                    lambda image, now_ms: fence_expired_brokers(image, self.tracker, now_ms,
                                                                self.settings))
                if fenced:
                    logger.info("committed %d record(s) fencing expired brokers", fenced)

    async def _rebalance_loop(self) -> None:
        """Every leader.imbalance.check.interval.seconds, elect preferred leaders for the
        brokers over leader.imbalance.per.broker.percentage."""
        interval = self.settings.leader_imbalance_check_interval_seconds
        percentage = self.settings.leader_imbalance_per_broker_percentage
        while True:
            await trio.sleep(interval)
            if self.is_active:
                moved = await self.write("preferred leader election",
                                         lambda image, now_ms: rebalance_changes(image,
                                                                                 percentage))
                if moved:
                    logger.info("moved %d partition leader(s) back to their preferred replica",
                                moved)

    # -- leadership ---------------------------------------------------------------------------

    @property
    def is_active(self) -> bool:
        """Whether this node acted as the active controller at the last leadership check."""
        return self._active_epoch is not None

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def check_leadership(self) -> QuorumStatus:
        """Read the quorum status and start or end this node's term as active controller."""
        status = self.quorum.status()
        if status.leader_id is not None and status.leader_id != self.node_id:
            self._previous_leader = status.leader_id
        if status.is_ready:
            if self._active_epoch != status.epoch:
                self._start_sessions(status)
                self._active_epoch = status.epoch
                logger.info("node %d is the active controller (epoch %d)", self.node_id, status.epoch)
        elif self._active_epoch is not None:
            logger.info("node %d is no longer the active controller (epoch %d ended; leader %s)",
                        self.node_id, self._active_epoch, status.leader_id)
            self._active_epoch = None
        self._caught_up.observe(status, self.now_ms())
        return status

    def _start_sessions(self, status: QuorumStatus) -> None:
        """On becoming the active controller: a session for every registered broker.

        Kafka's new active controller starts every session afresh. One broker is known
        better: the previous controller's, when that node is also a broker. This node heard
        from it until it went silent (a crash, a pause, a cut), so its session starts then,
        and a combined node cut off while it was the controller is fenced one session
        timeout after the cut, as any other broker is, not one after the election."""
        now_ms = self.now_ms()
        previous, self._previous_leader = self._previous_leader, None
        silent_ms = next((voter.last_contact_ms for voter in status.voters
                          if voter.node_id == previous and voter.node_id != self.node_id),
                         None)
        with self._tracker_lock:
            self.tracker.reset(self.state.image, now_ms)
            if previous is not None and silent_ms is not None \
                    and previous in self.state.image.brokers:
                self.tracker.touch(previous, now_ms - silent_ms)

    def has_majority_contact(self, status: QuorumStatus) -> bool:
        """Whether this leader heard from a majority of the voters within half an election
        timeout. One that did not may be cut off, a new controller already elected on the
        other side (once the election timeout passes): it takes no decision, and answers
        no broker heartbeat, so a broker cut off with it loses its session one session
        timeout after the cut rather than after this node steps down (Raft's check-quorum,
        1.5 x controller.quorum.fetch.timeout.ms)."""
        age = status.majority_contact_age_ms
        return age is not None and age < self.quorum.config.election_timeout_ms / 2

    # -- decisions ----------------------------------------------------------------------------

    async def decide_and_commit(self, decide: Decide[R]) -> R:
        """Run `decide` against the latest image as the active controller and commit its records.

        Returns the decision's result once its records (if any) are applied locally. Raises
        NotLeaderError if this node is not the ready leader (or stops being it),
        QuorumTimeoutError if the commit times out, CommandApplyError if the records did not
        replay (a decision bug: the batch was skipped everywhere).
        """
        status = self.check_leadership()
        if status.is_leader and not status.is_ready:
            # Just elected: its first entry commits within a round trip. Kafka's new
            # controller queues requests until then too; NOT_CONTROLLER would send the
            # broker on to the other voters, the old controller among them, which may be
            # unreachable and eat the request's whole timeout.
            await self.quorum.wait_ready(timeout_ms=self.append_timeout_ms)
            status = self.check_leadership()
        if not status.is_ready or not self.has_majority_contact(status):
            raise NotLeaderError(status.leader_id)
        async with self._decision_lock:
            status = self.check_leadership()
            if not status.is_ready or not self.has_majority_contact(status):
                raise NotLeaderError(status.leader_id)
            with self._tracker_lock:
                image = self.state.image
                records, result = decide(image, self.now_ms())
            if image.offset < 0 and self.bootstrap_records:
                records = [*self.bootstrap_records, *records]
            if records:
                # Bound to the epoch the decision was made in: a re-election in between
                # must not commit a decision taken against the old term's image.
                offset = await self.quorum.append([encode_record(r) for r in records],
                                                  timeout_ms=self.append_timeout_ms,
                                                  epoch=status.epoch)
                if self.state.was_rejected(offset):
                    raise CommandApplyError(f"metadata batch at offset {offset} did not replay")
            return result

    async def submit(self, request: DecodedRequest,
                     decide: Decide[Any]) -> Any:
        """Answer one controller RPC: the decision's response, or Kafka's error response
        (a dict, or the API's response message class)."""
        error_body = CONTROLLER_ERRORS[request.api_key]
        try:
            return await self.decide_and_commit(decide)
        except NotLeaderError:
            code = ErrorCode.NOT_CONTROLLER
        except QuorumTimeoutError:
            code = ErrorCode.REQUEST_TIMED_OUT
        except (CommandApplyError, QuorumError) as exc:
            logger.error("api %d failed to commit: %s", request.api_key, exc)
            code = ErrorCode.UNKNOWN_SERVER_ERROR
        return error_body(request.body, request.api_version, code)

    async def write(self, what: str,
                    records_for: Callable[[MetadataImage, int], list[MetadataRecord]]) -> int:
        """Commit the records a background check decides on; returns how many (0 when this
        node is not active or the commit failed, which is logged)."""
        def decide(image: MetadataImage, now_ms: int) -> tuple[list[MetadataRecord], int]:
            records = records_for(image, now_ms)
            return records, len(records)

        try:
            return await self.decide_and_commit(decide)
        except NotLeaderError:
            return 0
        except QuorumError as exc:
            logger.warning("%s: commit failed: %s", what, exc)
            return 0
        except Exception:
            # A decision bug must not take the controller (and the node) down with it.
            logger.exception("%s failed", what)
            return 0

    # -- read-only views ----------------------------------------------------------------------

    def describe_quorum(self, body: DescribeQuorumRequestData,
                        version: int) -> DescribeQuorumResponseData:
        """DescribeQuorumResponse body (of `version`) for this node's view of the quorum."""
        status = self.check_leadership()
        return describe_quorum_response(body, version, status, self.now_ms(), self._caught_up,
                                        self.endpoints)

    def describe_cluster(self, body: DescribeClusterRequestData,
                         version: int) -> DescribeClusterResponseData:
        """DescribeClusterResponse body as a controller answers it."""
        return describe_cluster_response(body, version, cluster_id=self.cluster_id,
                                         leader_id=self.quorum.status().leader_id,
                                         endpoints=self.endpoints)
