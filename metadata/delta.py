"""MetadataDelta: records replayed on top of an image, and what they changed.

Replay validates each record against the current state before touching anything, so a
rejected record leaves the delta as it was. `apply()` builds the next immutable image; the
change accessors let broker components diff (become leader / follower / delete).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from metadata.acl_records import AccessControlEntryRecord, AclChanges, RemoveAccessControlEntryRecord
from metadata.errors import MetadataReplayError
from metadata.scram import (
    RemoveUserScramCredentialRecord,
    ScramCredential,
    ScramKey,
    UserScramCredentialRecord,
    merge_credentials,
)
from metadata.client_quotas import ClientQuotaRecord, QuotaEntity, entity_of, merge_quotas
from metadata.image import (
    BrokerRegistration,
    ConfigResource,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
    frozen_map,
)
from metadata.records import (
    TOPIC_RESOURCE,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    MetadataRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)


@dataclass(frozen=True, slots=True)
class PartitionChange:
    """One partition touched by a delta; `previous` is None for a new partition."""

    topic_id: uuid.UUID
    topic_name: str
    partition_id: int
    previous: PartitionRegistration | None
    current: PartitionRegistration


@dataclass(frozen=True, slots=True)
class RemovedPartition:
    """A partition that a delta deletes (its topic was removed)."""

    topic_id: uuid.UUID
    topic_name: str
    partition_id: int


@dataclass(frozen=True, slots=True)
class LocalReplicaChanges:
    """What one broker must do: lead, follow, or delete its replica."""

    leaders: tuple[PartitionChange, ...]
    followers: tuple[PartitionChange, ...]
    deletes: tuple[RemovedPartition, ...]


@dataclass
class _TopicChange:
    name: str
    created: bool
    partitions: dict[int, PartitionRegistration] = field(default_factory=dict)


class MetadataDelta:
    """Accumulates records on top of `image`; not thread-safe (one writer builds it)."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.offset = image.offset
        self.epoch = image.epoch
        self._brokers: dict[int, BrokerRegistration | None] = {}
        self._registration_offsets: dict[int, int] = {}
        self._topics: dict[uuid.UUID, _TopicChange] = {}
        self._created_names: dict[str, uuid.UUID] = {}
        self._removed: dict[uuid.UUID, TopicImage] = {}
        self._configs: dict[ConfigResource, dict[str, str | None]] = {}
        self._features: dict[str, int] = {}
        self._next_producer_id: int | None = None
        self.acls = AclChanges(image.acls)
        self._scram: dict[ScramKey, ScramCredential | None] = {}
        self._quotas: dict[QuotaEntity, dict[str, float | None]] = {}

    # ---- replay -------------------------------------------------------------------------

    def replay(self, record: MetadataRecord, offset: int, epoch: int | None = None) -> None:
        """Apply one record committed at metadata `offset` (and Raft `epoch`, if known)."""
        handler = _HANDLERS.get(type(record))
        if handler is None:
            raise MetadataReplayError(f"cannot replay {type(record).__name__}")
        handler(self, record, offset)
        self.offset = offset
        if epoch is not None:
            self.epoch = epoch

    def _replay_register(self, r: RegisterBrokerRecord, offset: int) -> None:
        self._brokers[r.broker_id] = BrokerRegistration.from_record(r)
        self._registration_offsets[r.broker_id] = offset

    def _replay_unregister(self, r: UnregisterBrokerRecord, offset: int) -> None:
        self._require_broker(r.broker_id, r.broker_epoch)
        self._brokers[r.broker_id] = None
        self._registration_offsets.pop(r.broker_id, None)

    def _replay_fence(self, r: FenceBrokerRecord, offset: int) -> None:
        reg = self._require_broker(r.id, r.epoch)
        self._brokers[r.id] = _with(reg, fenced=True)

    def _replay_unfence(self, r: UnfenceBrokerRecord, offset: int) -> None:
        reg = self._require_broker(r.id, r.epoch)
        self._brokers[r.id] = _with(reg, fenced=False)

    def _replay_registration_change(self, r: BrokerRegistrationChangeRecord, offset: int) -> None:
        reg = self._require_broker(r.broker_id, r.broker_epoch)
        fenced = reg.fenced if r.fenced == 0 else r.fenced > 0
        shutdown = reg.in_controlled_shutdown or r.in_controlled_shutdown == 1
        self._brokers[r.broker_id] = _with(reg, fenced=fenced, in_controlled_shutdown=shutdown)

    def _replay_topic(self, r: TopicRecord, offset: int) -> None:
        if self.current_topic_name(r.topic_id) is not None:
            raise MetadataReplayError(f"topic id {r.topic_id} already exists")
        if self.current_topic_id(r.name) is not None:
            raise MetadataReplayError(f"topic {r.name!r} already exists")
        self._topics[r.topic_id] = _TopicChange(name=r.name, created=True)
        self._created_names[r.name] = r.topic_id

    def _replay_partition(self, r: PartitionRecord, offset: int) -> None:
        self._topic_change(r.topic_id).partitions[r.partition_id] = PartitionRegistration.from_record(r)

    def _replay_partition_change(self, r: PartitionChangeRecord, offset: int) -> None:
        current = self.current_partition(r.topic_id, r.partition_id)
        if current is None:
            raise MetadataReplayError(f"unknown partition {r.topic_id}:{r.partition_id}")
        self._topic_change(r.topic_id).partitions[r.partition_id] = current.merge(r)

    def _replay_remove_topic(self, r: RemoveTopicRecord, offset: int) -> None:
        name = self.current_topic_name(r.topic_id)
        if name is None:
            raise MetadataReplayError(f"unknown topic id {r.topic_id}")
        change = self._topics.pop(r.topic_id, None)
        if change is not None and change.created:
            del self._created_names[name]
        else:
            self._removed[r.topic_id] = self.image.topics_by_id[r.topic_id]
        # Kafka drops a deleted topic's configs with it.
        resource = (TOPIC_RESOURCE, name)
        existing = self.current_configs(resource)
        if existing:
            self._configs[resource] = {k: None for k in existing}
        else:
            self._configs.pop(resource, None)

    def _replay_config(self, r: ConfigRecord, offset: int) -> None:
        self._configs.setdefault((r.resource_type, r.resource_name), {})[r.name] = r.value

    def _replay_feature(self, r: FeatureLevelRecord, offset: int) -> None:
        self._features[r.name] = r.feature_level

    def _replay_producer_ids(self, r: ProducerIdsRecord, offset: int) -> None:
        self._next_producer_id = r.next_producer_id

    def _replay_scram(self, r: UserScramCredentialRecord, offset: int) -> None:
        self._scram[(r.name, r.mechanism)] = ScramCredential.from_record(r)

    def _replay_remove_scram(self, r: RemoveUserScramCredentialRecord, offset: int) -> None:
        self._scram[(r.name, r.mechanism)] = None

    def _replay_client_quota(self, r: ClientQuotaRecord, offset: int) -> None:
        self._quotas.setdefault(entity_of(r.entity), {})[r.key] = None if r.remove else r.value

    def _replay_noop(self, r: NoOpRecord, offset: int) -> None:
        pass

    def _replay_acl(self, r: AccessControlEntryRecord, offset: int) -> None:
        self.acls.replay_add(r)

    def _replay_remove_acl(self, r: RemoveAccessControlEntryRecord, offset: int) -> None:
        self.acls.replay_remove(r)

    # ---- current state (image + delta) --------------------------------------------------

    def current_broker(self, broker_id: int) -> BrokerRegistration | None:
        if broker_id in self._brokers:
            return self._brokers[broker_id]
        return self.image.brokers.get(broker_id)

    def current_topic_name(self, topic_id: uuid.UUID) -> str | None:
        change = self._topics.get(topic_id)
        if change is not None:
            return change.name
        if topic_id in self._removed:
            return None
        topic = self.image.topics_by_id.get(topic_id)
        return None if topic is None else topic.name

    def current_topic_id(self, name: str) -> uuid.UUID | None:
        if name in self._created_names:
            return self._created_names[name]
        topic = self.image.topics_by_name.get(name)
        return None if topic is None or topic.topic_id in self._removed else topic.topic_id

    def current_partition(self, topic_id: uuid.UUID, partition_id: int) -> PartitionRegistration | None:
        change = self._topics.get(topic_id)
        if change is not None and partition_id in change.partitions:
            return change.partitions[partition_id]
        if topic_id in self._removed or (change is not None and change.created):
            return None
        return self.image.partition(topic_id, partition_id)

    def current_configs(self, resource: ConfigResource) -> dict[str, str]:
        merged = dict(self.image.configs.get(resource, {}))
        for key, value in self._configs.get(resource, {}).items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        return merged

    def _require_broker(self, broker_id: int, epoch: int) -> BrokerRegistration:
        reg = self.current_broker(broker_id)
        if reg is None:
            raise MetadataReplayError(f"unknown broker {broker_id}")
        if reg.epoch != epoch:
            raise MetadataReplayError(f"broker {broker_id} has epoch {reg.epoch}, record says {epoch}")
        return reg

    def _topic_change(self, topic_id: uuid.UUID) -> _TopicChange:
        change = self._topics.get(topic_id)
        if change is None:
            name = self.current_topic_name(topic_id)
            if name is None:
                raise MetadataReplayError(f"unknown topic id {topic_id}")
            change = self._topics[topic_id] = _TopicChange(name=name, created=False)
        return change

    # ---- what changed -------------------------------------------------------------------

    def created_topics(self) -> dict[uuid.UUID, str]:
        """Topic id -> name of topics created by this delta (and not deleted again)."""
        return {tid: c.name for tid, c in self._topics.items() if c.created}

    def deleted_topics(self) -> Mapping[uuid.UUID, TopicImage]:
        """Topics of the base image removed by this delta, with their last state."""
        return dict(self._removed)

    def changed_partitions(self) -> list[PartitionChange]:
        out = []
        for tid, change in self._topics.items():
            for pid, current in sorted(change.partitions.items()):
                previous = None if change.created else self.image.partition(tid, pid)
                out.append(PartitionChange(tid, change.name, pid, previous, current))
        return out

    def changed_brokers(self) -> dict[int, tuple[BrokerRegistration | None, BrokerRegistration | None]]:
        """broker id -> (previous, current); None means not registered."""
        return {bid: (self.image.brokers.get(bid), cur) for bid, cur in self._brokers.items()}

    def broker_registration_offsets(self) -> dict[int, int]:
        """Offset of the RegisterBrokerRecord replayed for each broker (re)registered here."""
        return dict(self._registration_offsets)

    def changed_config_resources(self) -> set[ConfigResource]:
        return set(self._configs)

    def local_changes(self, broker_id: int) -> LocalReplicaChanges:
        """Partitions `broker_id` must now lead, follow or delete."""
        leaders, followers, deletes = [], [], []
        for ch in self.changed_partitions():
            if broker_id in ch.current.replicas:
                (leaders if ch.current.leader == broker_id else followers).append(ch)
            elif ch.previous is not None and broker_id in ch.previous.replicas:
                deletes.append(RemovedPartition(ch.topic_id, ch.topic_name, ch.partition_id))
        for tid, topic in self._removed.items():
            deletes.extend(
                RemovedPartition(tid, topic.name, pid)
                for pid, part in sorted(topic.partitions.items())
                if broker_id in part.replicas
            )
        return LocalReplicaChanges(tuple(leaders), tuple(followers), tuple(deletes))

    # ---- next image ---------------------------------------------------------------------

    def apply(self) -> MetadataImage:
        """The image after every replayed record; the delta stays usable for diffing."""
        base = self.image
        brokers = dict(base.brokers)
        for bid, reg in self._brokers.items():
            if reg is None:
                brokers.pop(bid, None)
            else:
                brokers[bid] = reg
        topics = dict(base.topics_by_id)
        names = dict(base.topics_by_name)
        for tid, removed in self._removed.items():
            del topics[tid]
            named = names.get(removed.name)
            if named is not None and named.topic_id == tid:
                del names[removed.name]
        for tid, change in self._topics.items():
            if change.created:
                parts = change.partitions
            else:
                parts = {**base.topics_by_id[tid].partitions, **change.partitions}
            topic = TopicImage(change.name, tid, frozen_map(parts))
            topics[tid] = names[change.name] = topic
        configs = dict(base.configs)
        for resource in self._configs:
            values = self.current_configs(resource)
            if values:
                configs[resource] = frozen_map(values)
            else:
                configs.pop(resource, None)
        features = dict(base.features)
        for name, level in self._features.items():
            if level == 0:
                features.pop(name, None)
            else:
                features[name] = level
        return MetadataImage(
            offset=self.offset,
            epoch=self.epoch,
            brokers=frozen_map(brokers),
            topics_by_id=frozen_map(topics),
            topics_by_name=frozen_map(names),
            configs=frozen_map(configs),
            next_producer_id=(
                base.next_producer_id if self._next_producer_id is None else self._next_producer_id
            ),
            features=frozen_map(features),
            acls=self.acls.apply(),
            scram_credentials=(frozen_map(merge_credentials(base.scram_credentials, self._scram))
                               if self._scram else base.scram_credentials),
            client_quotas=(frozen_map({e: frozen_map(v) for e, v in
                                       merge_quotas(base.client_quotas, self._quotas).items()})
                           if self._quotas else base.client_quotas),
        )


def _with(reg: BrokerRegistration, **changes: bool) -> BrokerRegistration:
    return replace(reg, **changes)


def apply_records(
    image: MetadataImage, records: list[MetadataRecord], first_offset: int | None = None
) -> tuple[MetadataDelta, MetadataImage]:
    """Replay `records` at consecutive offsets after `image.offset` (or from `first_offset`)."""
    delta = MetadataDelta(image)
    offset = image.offset + 1 if first_offset is None else first_offset
    for i, record in enumerate(records):
        delta.replay(record, offset + i)
    return delta, image.apply(delta)


_HANDLERS = {
    RegisterBrokerRecord: MetadataDelta._replay_register,
    UnregisterBrokerRecord: MetadataDelta._replay_unregister,
    FenceBrokerRecord: MetadataDelta._replay_fence,
    UnfenceBrokerRecord: MetadataDelta._replay_unfence,
    BrokerRegistrationChangeRecord: MetadataDelta._replay_registration_change,
    TopicRecord: MetadataDelta._replay_topic,
    PartitionRecord: MetadataDelta._replay_partition,
    PartitionChangeRecord: MetadataDelta._replay_partition_change,
    RemoveTopicRecord: MetadataDelta._replay_remove_topic,
    ConfigRecord: MetadataDelta._replay_config,
    FeatureLevelRecord: MetadataDelta._replay_feature,
    ProducerIdsRecord: MetadataDelta._replay_producer_ids,
    NoOpRecord: MetadataDelta._replay_noop,
    AccessControlEntryRecord: MetadataDelta._replay_acl,
    RemoveAccessControlEntryRecord: MetadataDelta._replay_remove_acl,
    UserScramCredentialRecord: MetadataDelta._replay_scram,
    RemoveUserScramCredentialRecord: MetadataDelta._replay_remove_scram,
    ClientQuotaRecord: MetadataDelta._replay_client_quota,
}
