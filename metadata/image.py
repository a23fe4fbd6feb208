"""MetadataImage: an immutable view of the cluster metadata at one metadata offset.

Every part is a frozen dataclass or a read-only mapping, so an image can be handed to any
thread and read without locks; the next image is `image.apply(delta)` (or `delta.apply()`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

from metadata.acl_records import acl_records
from metadata.acls import AclImage
from metadata.errors import MetadataReplayError
from metadata.scram import ScramCredential, ScramKey, credential_records
from metadata.client_quotas import QuotaEntity, quota_records
from metadata.records import (
    BROKER_RESOURCE,
    NO_LEADER,
    NO_LEADER_CHANGE,
    NO_RECOVERY_STATE_CHANGE,
    TOPIC_RESOURCE,
    BrokerEndpoint,
    BrokerFeature,
    ConfigRecord,
    FeatureLevelRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
)


class ImageChange(Protocol):
    """What `MetadataImage.apply` takes: a `metadata.delta.MetadataDelta` (which builds on
    this module, so it is named structurally here)."""

    @property
    def image(self) -> "MetadataImage": ...

    def apply(self) -> "MetadataImage": ...


ConfigResource = tuple[int, str]
"""(resource_type, resource_name): (2, topic name) or (4, broker id as text, "" = cluster)."""


def frozen_map(data: Mapping[Any, Any] | None = None) -> Mapping[Any, Any]:
    """A read-only mapping over a private copy of `data`."""
    return MappingProxyType(dict(data or {}))


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """A registered broker as the controller sees it."""

    broker_id: int
    incarnation_id: uuid.UUID
    epoch: int
    endpoints: tuple[BrokerEndpoint, ...] = ()
    features: tuple[BrokerFeature, ...] = ()
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False

    @property
    def is_active(self) -> bool:
        """Usable for leadership, ISR membership and new replicas."""
        return not self.fenced and not self.in_controlled_shutdown

    def endpoint(self, listener_name: str) -> BrokerEndpoint | None:
        for ep in self.endpoints:
            if ep.name == listener_name:
                return ep
        return None

    @classmethod
    def from_record(cls, record: RegisterBrokerRecord) -> BrokerRegistration:
        return cls(
            broker_id=record.broker_id,
            incarnation_id=record.incarnation_id,
            epoch=record.broker_epoch,
            endpoints=record.end_points,
            features=record.features,
            rack=record.rack,
            fenced=record.fenced,
            in_controlled_shutdown=record.in_controlled_shutdown,
        )

    def to_record(self) -> RegisterBrokerRecord:
        return RegisterBrokerRecord(
            broker_id=self.broker_id,
            incarnation_id=self.incarnation_id,
            broker_epoch=self.epoch,
            end_points=self.endpoints,
            features=self.features,
            rack=self.rack,
            fenced=self.fenced,
            in_controlled_shutdown=self.in_controlled_shutdown,
        )


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """Replica set, ISR, leader and epochs of one partition."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int = NO_LEADER
    leader_epoch: int = 0
    partition_epoch: int = 0
    leader_recovery_state: int = 0
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()

    @property
    def preferred_leader(self) -> int:
        return self.replicas[0] if self.replicas else NO_LEADER

    @classmethod
    def from_record(cls, record: PartitionRecord) -> PartitionRegistration:
        return cls(
            replicas=record.replicas,
            isr=record.isr,
            leader=record.leader,
            leader_epoch=record.leader_epoch,
            partition_epoch=record.partition_epoch,
            leader_recovery_state=record.leader_recovery_state,
            removing_replicas=record.removing_replicas,
            adding_replicas=record.adding_replicas,
        )

    def to_record(self, topic_id: uuid.UUID, partition_id: int) -> PartitionRecord:
        return PartitionRecord(
            partition_id=partition_id,
            topic_id=topic_id,
            replicas=self.replicas,
            isr=self.isr,
            removing_replicas=self.removing_replicas,
            adding_replicas=self.adding_replicas,
            leader=self.leader,
            leader_recovery_state=self.leader_recovery_state,
            leader_epoch=self.leader_epoch,
            partition_epoch=self.partition_epoch,
        )

    def merge(self, change: PartitionChangeRecord) -> PartitionRegistration:
        """The state after `change`: partition epoch always bumps, leader epoch on a new leader."""
        leader, leader_epoch = self.leader, self.leader_epoch
        if change.leader != NO_LEADER_CHANGE:
            leader, leader_epoch = change.leader, self.leader_epoch + 1
        recovery = self.leader_recovery_state
        if change.leader_recovery_state != NO_RECOVERY_STATE_CHANGE:
            recovery = change.leader_recovery_state
        return PartitionRegistration(
            replicas=self.replicas if change.replicas is None else change.replicas,
            isr=self.isr if change.isr is None else change.isr,
            leader=leader,
            leader_epoch=leader_epoch,
            partition_epoch=self.partition_epoch + 1,
            leader_recovery_state=recovery,
            removing_replicas=(
                self.removing_replicas if change.removing_replicas is None else change.removing_replicas
            ),
            adding_replicas=(
                self.adding_replicas if change.adding_replicas is None else change.adding_replicas
            ),
        )


@dataclass(frozen=True)
class TopicImage:
    """One topic and its partitions (partition id -> registration)."""

    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionRegistration] = field(default_factory=frozen_map)

    def partition_count(self) -> int:
        return len(self.partitions)


@dataclass(frozen=True)
class MetadataImage:
    """The whole cluster metadata after applying every record up to `offset`."""

    offset: int = -1
    epoch: int = -1
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=frozen_map)
    topics_by_id: Mapping[uuid.UUID, TopicImage] = field(default_factory=frozen_map)
    topics_by_name: Mapping[str, TopicImage] = field(default_factory=frozen_map)
    configs: Mapping[ConfigResource, Mapping[str, str]] = field(default_factory=frozen_map)
    next_producer_id: int = 0
    features: Mapping[str, int] = field(default_factory=frozen_map)
    acls: AclImage = field(default_factory=AclImage.empty)
    scram_credentials: Mapping[ScramKey, ScramCredential] = field(default_factory=frozen_map)
    client_quotas: Mapping[QuotaEntity, Mapping[str, float]] = field(default_factory=frozen_map)

    @classmethod
    def empty(cls) -> MetadataImage:
        return cls()

    def apply(self, delta: ImageChange) -> MetadataImage:
        """The next image: this one with `delta`'s records applied.

        A delta records changes relative to the image it was built on, so applying it to any
        other image would silently mix two histories; that is refused.
        """
        if delta.image is not self:
            raise MetadataReplayError(
                f"delta was built on the image at offset {delta.image.offset}, "
                f"not on this one at offset {self.offset}"
            )
        return delta.apply()

    def topic(self, name: str) -> TopicImage | None:
        return self.topics_by_name.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicImage | None:
        return self.topics_by_id.get(topic_id)

    def partition(self, topic_id: uuid.UUID, partition_id: int) -> PartitionRegistration | None:
        topic = self.topics_by_id.get(topic_id)
        return None if topic is None else topic.partitions.get(partition_id)

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)

    def is_active_broker(self, broker_id: int) -> bool:
        reg = self.brokers.get(broker_id)
        return reg is not None and reg.is_active

    def topic_config(self, topic_name: str) -> Mapping[str, str]:
        """Explicit (non-default) configs of a topic."""
        return self.configs.get((TOPIC_RESOURCE, topic_name), _EMPTY)

    def broker_config(self, broker_id: int | None = None) -> Mapping[str, str]:
        """Dynamic configs of one broker, or the cluster-wide default when broker_id is None."""
        name = "" if broker_id is None else str(broker_id)
        return self.configs.get((BROKER_RESOURCE, name), _EMPTY)

    def to_records(self) -> list[MetadataRecord]:
        """Records that rebuild this image (minus offset/epoch) when replayed into an empty one."""
        out: list[MetadataRecord] = [
            FeatureLevelRecord(name=name, feature_level=level)
            for name, level in sorted(self.features.items())
        ]
        out.extend(reg.to_record() for _, reg in sorted(self.brokers.items()))
        for topic in sorted(self.topics_by_id.values(), key=lambda t: t.name):
            out.append(TopicRecord(name=topic.name, topic_id=topic.topic_id))
            out.extend(
                part.to_record(topic.topic_id, pid) for pid, part in sorted(topic.partitions.items())
            )
        for (rtype, rname), values in sorted(self.configs.items()):
            out.extend(
                ConfigRecord(resource_type=rtype, resource_name=rname, name=k, value=v)
                for k, v in sorted(values.items())
            )
        if self.next_producer_id:
            out.append(
                ProducerIdsRecord(broker_id=-1, broker_epoch=-1, next_producer_id=self.next_producer_id)
            )
        out.extend(acl_records(self.acls))
        out.extend(credential_records(self.scram_credentials))
        out.extend(quota_records(self.client_quotas))
        return out


_EMPTY: Mapping[str, str] = frozen_map()
