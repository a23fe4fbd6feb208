"""QuorumController: the controller role of a voter node.

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

from broker.controller.describe_quorum import (
    CaughtUpTimes,
    ControllerEndpoint,
    describe_cluster_response,
    describe_quorum_response,
)
from broker.controller.handlers import install_handlers
from broker.controller.responses import error_response
from broker.controller.tasks import run_background_tasks
from clients.protocol import ErrorCode
from kraft.errors import CommandApplyError, NotLeaderError, QuorumError, QuorumTimeoutError
from kraft.metadata_state_machine import MetadataStateMachine
from kraft.quorum import RaftQuorum
from kraft.status import QuorumStatus
from metadata.delta import MetadataDelta
from metadata.heartbeats import BrokerHeartbeatTracker
from metadata.image import MetadataImage
from metadata.record_codec import encode_record
from metadata.records import MetadataRecord
from metadata.settings import ControllerSettings

if TYPE_CHECKING:
    from broker.config import ServerConfig
    from broker.network import RequestRouter

logger = logging.getLogger(__name__)

R = TypeVar("R")
# (image, now_ms) -> (records to commit, result); runs with the heartbeat tracker locked.
Decide = Callable[[MetadataImage, int], tuple[list[MetadataRecord], R]]


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
        self._caught_up = CaughtUpTimes()
        state.add_publisher(_LockedTracker(self.tracker, self._tracker_lock))

    # -- wiring -------------------------------------------------------------------------------

    def register(self, router: "RequestRouter") -> None:
        """Install the CONTROLLER listener's APIs (controller RPCs, DescribeQuorum,
        DescribeCluster and ApiVersions) on `router`."""
        install_handlers(router, self)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Watch leadership, fence silent brokers and rebalance leaders until cancelled."""
        await run_background_tasks(self, task_status=task_status)

    # -- leadership ---------------------------------------------------------------------------

    @property
    def is_active(self) -> bool:
        """Whether this node acted as the active controller at the last leadership check."""
        return self._active_epoch is not None

    @property
    def active_epoch(self) -> int | None:
        """The controller epoch (Raft term) this node is active in, else None."""
        return self._active_epoch

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def check_leadership(self) -> QuorumStatus:
        """Read the quorum status and start or end this node's term as active controller."""
        status = self.quorum.status()
        if status.is_ready:
            if self._active_epoch != status.epoch:
                # Kafka's new active controller gives every broker a fresh session.
                with self._tracker_lock:
                    self.tracker.reset(self.state.image, self.now_ms())
                self._active_epoch = status.epoch
                logger.info("node %d is the active controller (epoch %d)", self.node_id, status.epoch)
        elif self._active_epoch is not None:
            logger.info("node %d is no longer the active controller (epoch %d ended; leader %s)",
                        self.node_id, self._active_epoch, status.leader_id)
            self._active_epoch = None
        self._caught_up.observe(status, self.now_ms())
        return status

    # -- decisions ----------------------------------------------------------------------------

    async def decide_and_commit(self, decide: Decide[R]) -> R:
        """Run `decide` against the latest image as the active controller and commit its records.

        Returns the decision's result once its records (if any) are applied locally. Raises
        NotLeaderError if this node is not the ready leader (or stops being it),
        QuorumTimeoutError if the commit times out, CommandApplyError if the records did not
        replay (a decision bug: the batch was skipped everywhere).
        """
        status = self.check_leadership()
        if not status.is_ready:
            raise NotLeaderError(status.leader_id)
        async with self._decision_lock:
            status = self.check_leadership()
            if not status.is_ready:
                raise NotLeaderError(status.leader_id)
            with self._tracker_lock:
                records, result = decide(self.state.image, self.now_ms())
            if records:
                # Bound to the epoch the decision was made in: a re-election in between
                # must not commit a decision taken against the old term's image.
                offset = await self.quorum.append([encode_record(r) for r in records],
                                                  timeout_ms=self.append_timeout_ms,
                                                  epoch=status.epoch)
                if self.state.was_rejected(offset):
                    raise CommandApplyError(f"metadata batch at offset {offset} did not replay")
            return result

    async def submit(self, api_key: int, body: Mapping[str, Any],
                     decide: Decide[dict[str, Any]]) -> dict[str, Any]:
        """Answer one controller RPC: the decision's response, or Kafka's error response."""
        try:
            return await self.decide_and_commit(decide)
        except NotLeaderError:
            return error_response(api_key, body, ErrorCode.NOT_CONTROLLER)
        except QuorumTimeoutError:
            return error_response(api_key, body, ErrorCode.REQUEST_TIMED_OUT)
        except (CommandApplyError, QuorumError) as exc:
            logger.error("api %d failed to commit: %s", api_key, exc)
            return error_response(api_key, body, ErrorCode.UNKNOWN_SERVER_ERROR)

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

    def describe_quorum(self, body: Mapping[str, Any], version: int) -> dict[str, Any]:
        """DescribeQuorumResponse body (of `version`) for this node's view of the quorum."""
        status = self.check_leadership()
        return describe_quorum_response(body, version, status, self.now_ms(), self._caught_up,
                                        self.endpoints)

    def describe_cluster(self, body: Mapping[str, Any], version: int) -> dict[str, Any]:
        """DescribeClusterResponse body as a controller answers it."""
        return describe_cluster_response(body, version, cluster_id=self.cluster_id,
                                         leader_id=self.quorum.status().leader_id,
                                         endpoints=self.endpoints)
