"""The ReplicaManager: this broker's partition replicas, driven by metadata images.

It is a trio-side metadata publisher: each delta says which local replicas to lead, follow
or delete (Kafka's KRaft replacement for LeaderAndIsr/StopReplica). Appends and reads go
through `broker.replica.append.append_records` and `broker.replica.fetch.fetch_messages`, whose
waits (acks=all, the long poll) sit in its purgatory, notified whenever a partition's data or
leadership changes.
"""

from __future__ import annotations

import logging
import uuid
from typing import Callable, Iterator, Mapping, Protocol, Sequence, Union

import trio

from broker.log.manager import LogManager
from broker.log.partition_log import PartitionLog
from broker.replica.errors import NotLeaderOrFollower, OfflineReplica, UnknownTopicOrPartition
from broker.replica.partition import Partition
from broker.replica.purgatory import Purgatory
from broker.stats.counters import BrokerTopicStats, ReplicaStats
from clients.clock import wall_clock_ms
from metadata.delta import MetadataDelta, PartitionChange, apply_records
from metadata.image import MetadataImage
from metadata.records import NO_LEADER, TOPIC_RESOURCE
from broker.replica.replication_quota import ReplicationQuota
from metadata.topic_configs import effective_topic_config

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
# Called after each metadata update with the partitions this broker now follows and the
# keys it stopped following: the seam for the replica fetcher.
FollowerListener = Callable[[Sequence[Partition], Sequence[TopicPartition]], None]


class IsrSender(Protocol):
    """Where leaders' ISR proposals go (`broker.replica.alter_partition`)."""

    def submit(self, partition: Partition, new_isr: tuple[int, ...]) -> bool:
        ...


# Waiters on a partition's (topic, partition) key are woken when what consumers may read
# or where acks stand changes (the HW, the leadership); follower fetches also watch its
# `appended_key`, woken by every append.
WaitKey = Union[TopicPartition, tuple[str, int, str]]


def appended_key(key: TopicPartition) -> tuple[str, int, str]:
    """The purgatory key notified by each append to `key`, whether or not its HW moved."""
    return (key[0], key[1], "appended")


class ReplicaManager:
    """Local partitions by (topic, partition); `purgatory` wakes requests waiting on them."""

    def __init__(self, broker_id: int, log_manager: LogManager,
                 broker_log_defaults: Mapping[str, str] | None = None) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.broker_log_defaults = dict(broker_log_defaults or log_manager.broker_defaults)
        self.purgatory: Purgatory[WaitKey] = Purgatory()
        self.session_lost = False
        self._partitions: dict[TopicPartition, Partition] = {}
        self._image = MetadataImage.empty()
        self._follower_listeners: list[FollowerListener] = []
        # None: ISR changes are never proposed (a broker without a controller channel).
        self.isr_sender: IsrSender | None = None
        self.topic_stats = BrokerTopicStats()
        self.replica_stats = ReplicaStats()
        # The leader-side replication throttle, read by follower fetches.
        self.leader_quota: ReplicationQuota | None = None
        # replica.selector.class: None serves consumers from the leader only (KIP-392).
        self.replica_selector: str | None = None

    @property
    def image(self) -> MetadataImage:
        """The latest image this manager acted on."""
        return self._image

    def add_follower_listener(self, listener: FollowerListener) -> None:
        self._follower_listeners.append(listener)

    # -- lookups -------------------------------------------------------------------------

    def get_partition(self, topic: str, partition: int) -> Partition | None:
        return self._partitions.get((topic, partition))

    def partitions(self) -> list[Partition]:
        return list(self._partitions.values())

    def is_unknown(self, topic: str, partition: int) -> bool:
        """Whether `leader_partition` would answer UNKNOWN_TOPIC_OR_PARTITION: told without
        raising, for requests that name a great many partitions."""
        if (topic, partition) in self._partitions:
            return False
        topic_image = self._image.topic(topic)
        return topic_image is None or partition not in topic_image.partitions

    def leader_partition(self, topic: str, partition: int,
                         current_leader_epoch: int = -1) -> Partition:
        """The local leader replica, or a ReplicaError carrying Kafka's error code."""
        local = self._partitions.get((topic, partition))
        if local is None:
            topic_image = self._image.topic(topic)
            if topic_image is not None and partition in topic_image.partitions:
                raise NotLeaderOrFollower(
                    f"broker {self.broker_id} hosts no replica of {topic}-{partition}")
            raise UnknownTopicOrPartition(f"unknown partition {topic}-{partition}")
        if local.log.offline:
            raise OfflineReplica(f"{topic}-{partition}: its log directory on broker "
                                 f"{self.broker_id} is offline")
        local.check_leader_epoch(current_leader_epoch)
        local.require_leader()
        if self.session_lost:
            raise NotLeaderOrFollower(
                f"broker {self.broker_id} has lost its session with the controller, which "
                f"may have moved {topic}-{partition}'s leadership elsewhere")
        return local

    @property
    def under_replicated_partitions(self) -> int:
        """Led partitions whose ISR is smaller than their replica set (Kafka's
        UnderReplicatedPartitions metric)."""
        return sum(1 for p in self._partitions.values() if p.is_under_replicated)

    @property
    def under_min_isr_partitions(self) -> int:
        """Led partitions whose ISR is below min.insync.replicas: acks=all writes to them
        fail (Kafka's UnderMinIsrPartitionCount)."""
        return sum(1 for p in self._partitions.values()
                   if p.is_leader and p.is_under_min_isr)

    @property
    def leader_count(self) -> int:
        """Partitions this broker leads (Kafka's LeaderCount)."""
        return sum(1 for p in self._partitions.values() if p.is_leader)

    @property
    def partition_count(self) -> int:
        """Replicas hosted here, led or followed (Kafka's PartitionCount)."""
        return len(self._partitions)

    @property
    def offline_partitions(self) -> int:
        """Partitions of the whole cluster without a leader, as the latest image shows them
        (Kafka's OfflinePartitionsCount, which only the active controller reports there)."""
        return sum(1 for topic in self._image.topics_by_id.values()
                   for registration in topic.partitions.values()
                   if registration.leader == NO_LEADER)

    def is_isr_eligible(self, broker_id: int) -> bool:
        """Whether `broker_id` may join an ISR: registered, unfenced, not shutting down."""
        registration = self._image.broker(broker_id)
        return registration is not None and registration.is_active

    def on_follower_fetch(self, partition: Partition, replica_id: int, fetch_offset: int,
                          now_ms: int | None = None) -> None:
        """A follower's fetch reached the leader `partition`: record its position, wake
        waiters if the HW moved, and propose it back into the ISR once it caught up."""
        if partition.record_follower_fetch(replica_id, fetch_offset, now_ms):
            self.notify_high_watermark(partition.key)
        if self.isr_sender is not None:
            new_isr = partition.isr_expansion(replica_id, self.is_isr_eligible)
            if new_isr is not None:
                self.isr_sender.submit(partition, new_isr)

    def shrink_isrs(self, now_ms: int, max_lag_ms: int) -> int:
        """Propose dropping followers lagging over `max_lag_ms`; returns proposals made."""
        if self.isr_sender is None:
            return 0
        proposed = 0
        for partition in list(self._partitions.values()):
            new_isr = partition.isr_shrink(now_ms, max_lag_ms)
            if new_isr is not None:
                logger.info("%s-%d: followers %s lag more than %d ms", partition.topic,
                            partition.partition_id,
                            [r for r in partition.isr if r not in new_isr], max_lag_ms)
                proposed += self.isr_sender.submit(partition, new_isr)
        return proposed

    async def run_isr_expiration(self, max_lag_ms: int, *,
                                 task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
                                 ) -> None:
        """Check for lagging ISR members every `max_lag_ms / 2` (Kafka's schedule)."""
        task_status.started()
        while True:
            await trio.sleep(max_lag_ms / 2000)
            self.shrink_isrs(wall_clock_ms(), max_lag_ms)

    def set_session_lost(self, lost: bool) -> None:
        """While this broker has heard nothing from the controller for a whole session
        timeout, the controller has fenced it and elected other leaders: refuse to act as
        leader (NOT_LEADER_OR_FOLLOWER), and fail waiting acks=all produces, so clients go to
        the new leaders now instead of after their request timeout."""
        self.session_lost = lost
        if lost:
            for key in list(self._partitions):
                self.notify(key)

    def notify(self, key: TopicPartition) -> None:
        """Wake every request waiting on `key`: its leadership or replica changed (or it
        may have), which concerns consumers, acks and follower fetches alike."""
        self.purgatory.notify(key)
        self.purgatory.notify(appended_key(key))

    def notify_high_watermark(self, key: TopicPartition) -> None:
        """`key`'s HW moved: wake the consumers and the acks waiting on it, not the follower
        fetches (as in Kafka, a follower learns the HW with its next fetch)."""
        self.purgatory.notify(key)

    def notify_appended(self, partition: Partition, high_watermark_before: int) -> None:
        """A leader append landed: wake the follower fetches, and the consumers and acks
        only when the HW moved with it (an ISR of one); otherwise a follower's next fetch
        moves it and wakes them then."""
        if partition.high_watermark != high_watermark_before:
            self.notify(partition.key)
        else:
            self.purgatory.notify(appended_key(partition.key))

    # -- metadata ------------------------------------------------------------------------

    async def on_metadata(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Trio-side publisher entry point (`broker.metadata_bridge`): `on_metadata_update`,
        letting the other tasks run after each partition it opens, moves or deletes. A
        topic of thousands of partitions takes a while to lay out on disk; the node keeps
        answering meanwhile, the partitions not yet reached answering as not led here."""
        for _ in self._metadata_steps(delta, image):
            await trio.lowlevel.checkpoint()

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Act on `delta`, which leads from the previous image to `image`."""
        for _ in self._metadata_steps(delta, image):
            pass

    def _metadata_steps(self, delta: MetadataDelta, image: MetadataImage) -> Iterator[None]:
        """`on_metadata_update`, yielding after each partition it acts on."""
        if delta.image.offset != self._image.offset:
            # Updates were missed (a publisher added late, or a snapshot load): diff the
            # whole image instead, and drop local replicas it no longer assigns here.
            logger.info("replica manager: reconciling with the full image at offset %d",
                        image.offset)
            delta = self._full_delta(image)
            self._remove_unassigned(image)
        self._image = image
        changes = delta.local_changes(self.broker_id)
        stopped_following: list[TopicPartition] = []
        for removed in changes.deletes:
            key = (removed.topic_name, removed.partition_id)
            self._delete(key, removed.topic_id)
            stopped_following.append(key)
            yield
        for change in changes.leaders:
            if self._become(change, image, leader=True) is not None:
                stopped_following.append((change.topic_name, change.partition_id))
            yield
        followed: list[Partition] = []
        for change in changes.followers:
            partition = self._become(change, image, leader=False)
            if partition is not None:
                followed.append(partition)
            yield
        self._apply_config_changes(delta, image)
        if followed or stopped_following:
            for listener in self._follower_listeners:
                listener(followed, stopped_following)

    @staticmethod
    def _full_delta(image: MetadataImage) -> MetadataDelta:
        delta, _ = apply_records(MetadataImage.empty(), image.to_records(), 0)
        return delta

    def _remove_unassigned(self, image: MetadataImage) -> None:
        for key, partition in list(self._partitions.items()):
            registration = image.partition(partition.topic_id, partition.partition_id)
            if registration is None or self.broker_id not in registration.replicas:
                self._delete(key, partition.topic_id)

    def delete_stray_logs(self) -> list[TopicPartition]:
        """Delete the local logs the latest image no longer assigns to this broker: replicas
        reassigned away or topics deleted while it was down (Kafka's stray replicas). Call it
        once the metadata has caught up. Returns the partitions deleted."""
        image = self._image
        deleted: list[TopicPartition] = []
        if image.offset < 0:
            return deleted
        for log in self.log_manager.logs():
            key = (log.topic, log.partition)
            if key in self._partitions:
                continue
            topic = image.topic(log.topic)
            registration = None if topic is None else topic.partitions.get(log.partition)
            if (topic is not None and registration is not None
                    and self.broker_id in registration.replicas
                    and log.topic_id in (None, topic.topic_id)):
                continue
            logger.info("deleting stray log %s-%d: the metadata assigns it elsewhere",
                        log.topic, log.partition)
            self.log_manager.delete_log(*key)
            deleted.append(key)
        return deleted

    def _delete(self, key: TopicPartition, topic_id: uuid.UUID) -> None:
        partition = self._partitions.get(key)
        if partition is not None and partition.topic_id != topic_id:
            return  # the name now belongs to a newer topic
        self._partitions.pop(key, None)
        log = self.log_manager.get_log(*key)
        if log is not None and log.topic_id in (None, topic_id):
            self.log_manager.delete_log(*key)
        self.notify(key)

    def _open_log(self, topic: str, partition: int, topic_id: uuid.UUID,
                  overrides: Mapping[str, str]) -> PartitionLog:
        existing = self.log_manager.get_log(topic, partition)
        if existing is not None and existing.topic_id not in (None, topic_id):
            # A log left by an older topic of the same name: metadata is the authority.
            logger.warning("deleting stale log %s-%d of topic id %s (now %s)", topic, partition,
                           existing.topic_id, topic_id)
            self.log_manager.delete_log(topic, partition)
        return self.log_manager.get_or_create_log(topic, partition, topic_id, overrides)

    def apply_broker_topic_defaults(self, defaults: Mapping[str, str],
                                    image: MetadataImage) -> None:
        """This node's broker-level topic defaults changed (`metadata.topic_config_layers`
        resolves them): every local log, and every partition's min.insync.replicas, whose
        topic does not override a key takes its new value now, as in Kafka."""
        self.broker_log_defaults = dict(defaults)
        self.log_manager.set_broker_defaults(defaults)
        min_isr: dict[str, int] = {}
        for partition in self._partitions.values():
            topic = partition.topic
            if topic not in min_isr:
                min_isr[topic] = self._min_insync_replicas(image.topic_config(topic))
            partition.min_insync_replicas = min_isr[topic]

    def _min_insync_replicas(self, overrides: Mapping[str, str]) -> int:
        try:
            value = effective_topic_config(overrides, self.broker_log_defaults)
            return int(value["min.insync.replicas"])  # type: ignore[call-overload]
        except ValueError:
            return 1

    def _become(self, change: PartitionChange, image: MetadataImage, *,
                leader: bool) -> Partition | None:
        key = (change.topic_name, change.partition_id)
        overrides = image.topic_config(change.topic_name)
        try:
            partition = self._partitions.get(key)
            if partition is not None and partition.topic_id != change.topic_id:
                self._delete(key, partition.topic_id)
                partition = None
            if partition is None:
                log = self._open_log(change.topic_name, change.partition_id, change.topic_id,
                                     overrides)
                partition = Partition(self.broker_id, change.topic_name, change.partition_id,
                                      change.topic_id, log)
                partition.topic_stats = self.topic_stats
                partition.replica_stats = self.replica_stats
                self._partitions[key] = partition
            partition.min_insync_replicas = self._min_insync_replicas(overrides)
            if leader:
                partition.make_leader(change.current)
            else:
                partition.make_follower(change.current)
        except Exception:
            logger.exception("cannot make %s-%d a %s", change.topic_name, change.partition_id,
                             "leader" if leader else "follower")
            return None
        finally:
            self.notify(key)
        return partition

    def _apply_config_changes(self, delta: MetadataDelta, image: MetadataImage) -> None:
        for resource_type, name in delta.changed_config_resources():
            if resource_type != TOPIC_RESOURCE or image.topic(name) is None:
                continue
            overrides = image.topic_config(name)
            try:
                self.log_manager.update_topic_config(name, overrides)
            except ValueError:
                logger.exception("invalid config for topic %s", name)
                continue
            min_isr = self._min_insync_replicas(overrides)
            for partition in self._partitions.values():
                if partition.topic == name:
                    partition.min_insync_replicas = min_isr
            logger.info("applied new config of topic %s", name)
