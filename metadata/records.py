"""KRaft metadata records: one frozen dataclass per record type.

Field names are the snake_case of Kafka's field names and the fields are exactly those
present at each class's `VERSION` of the reference record definition. `API_KEY` is Kafka's
record type number. Lists are tuples so records stay hashable and immutable.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import ClassVar, Union

from metadata.acl_records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from metadata.client_quotas import ClientQuotaRecord
from metadata.scram import RemoveUserScramCredentialRecord, UserScramCredentialRecord

# PartitionChangeRecord.leader: the leader did not change.
NO_LEADER_CHANGE = -2
NO_LEADER = -1

# leader_recovery_state values (PartitionRecord); -1 in a PartitionChangeRecord = unchanged.
LEADER_RECOVERED = 0
LEADER_RECOVERING = 1
NO_RECOVERY_STATE_CHANGE = -1

# ConfigRecord.resource_type (Kafka's ConfigResource.Type ids).
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4

# BrokerRegistrationChangeRecord tri-states.
FENCE_UNCHANGED = 0
FENCE_SET = 1
FENCE_CLEARED = -1


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    """One listener of a broker (RegisterBrokerRecord.EndPoints)."""

    name: str
    host: str
    port: int
    security_protocol: int


@dataclass(frozen=True, slots=True)
class BrokerFeature:
    """A feature range a broker supports (RegisterBrokerRecord.Features)."""

    name: str
    min_supported_version: int
    max_supported_version: int


@dataclass(frozen=True, slots=True)
class RegisterBrokerRecord:
    """A broker (re)registration; replaces any previous registration of the id."""

    API_KEY: ClassVar[int] = 0
    VERSION: ClassVar[int] = 1

    broker_id: int
    incarnation_id: uuid.UUID
    broker_epoch: int
    end_points: tuple[BrokerEndpoint, ...] = ()
    features: tuple[BrokerFeature, ...] = ()
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False


@dataclass(frozen=True, slots=True)
class UnregisterBrokerRecord:
    """Removes a broker's registration."""

    API_KEY: ClassVar[int] = 1
    VERSION: ClassVar[int] = 0

    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class TopicRecord:
    """Creates a topic; its partitions follow as PartitionRecords."""

    API_KEY: ClassVar[int] = 2
    VERSION: ClassVar[int] = 0

    name: str
    topic_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    """The full state of one partition (creation and snapshots)."""

    API_KEY: ClassVar[int] = 3
    VERSION: ClassVar[int] = 0

    partition_id: int
    topic_id: uuid.UUID
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader: int = NO_LEADER
    leader_recovery_state: int = LEADER_RECOVERED
    leader_epoch: int = -1
    partition_epoch: int = -1


@dataclass(frozen=True, slots=True)
class ConfigRecord:
    """Sets (or, with value None, deletes) one config of a topic or broker resource."""

    API_KEY: ClassVar[int] = 4
    VERSION: ClassVar[int] = 0

    resource_type: int
    resource_name: str
    name: str
    value: str | None  # None deletes the key


@dataclass(frozen=True, slots=True)
class PartitionChangeRecord:
    """Only the fields that changed; None / -2 / -1 (recovery state) mean unchanged."""

    API_KEY: ClassVar[int] = 5
    VERSION: ClassVar[int] = 0

    partition_id: int
    topic_id: uuid.UUID
    isr: tuple[int, ...] | None = None
    leader: int = NO_LEADER_CHANGE
    replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    leader_recovery_state: int = NO_RECOVERY_STATE_CHANGE


@dataclass(frozen=True, slots=True)
class FenceBrokerRecord:
    """Fences a broker (its ISR and leadership changes are separate records)."""

    API_KEY: ClassVar[int] = 7
    VERSION: ClassVar[int] = 0

    id: int
    epoch: int


@dataclass(frozen=True, slots=True)
class UnfenceBrokerRecord:
    """Unfences a broker."""

    API_KEY: ClassVar[int] = 8
    VERSION: ClassVar[int] = 0

    id: int
    epoch: int


@dataclass(frozen=True, slots=True)
class RemoveTopicRecord:
    """Deletes a topic, its partitions and its configs."""

    API_KEY: ClassVar[int] = 9
    VERSION: ClassVar[int] = 0

    topic_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class FeatureLevelRecord:
    """Finalized feature level; level 0 removes the feature (Kafka's convention)."""

    API_KEY: ClassVar[int] = 12
    VERSION: ClassVar[int] = 0

    name: str
    feature_level: int


@dataclass(frozen=True, slots=True)
class ProducerIdsRecord:
    """Moves the start of the next producer id block."""

    API_KEY: ClassVar[int] = 15
    VERSION: ClassVar[int] = 0

    broker_id: int
    broker_epoch: int
    next_producer_id: int


@dataclass(frozen=True, slots=True)
class BrokerRegistrationChangeRecord:
    """fenced: 1 fence, -1 unfence, 0 unchanged; in_controlled_shutdown: 1 enter, 0 unchanged."""

    API_KEY: ClassVar[int] = 17
    VERSION: ClassVar[int] = 1

    broker_id: int
    broker_epoch: int
    fenced: int = FENCE_UNCHANGED
    in_controlled_shutdown: int = 0


@dataclass(frozen=True, slots=True)
class NoOpRecord:
    """Carries nothing; advances the metadata offset."""

    API_KEY: ClassVar[int] = 20
    VERSION: ClassVar[int] = 0


MetadataRecord = Union[
    RegisterBrokerRecord,
    UnregisterBrokerRecord,
    TopicRecord,
    PartitionRecord,
    ConfigRecord,
    PartitionChangeRecord,
    FenceBrokerRecord,
    UnfenceBrokerRecord,
    RemoveTopicRecord,
    FeatureLevelRecord,
    ProducerIdsRecord,
    BrokerRegistrationChangeRecord,
    NoOpRecord,
    AccessControlEntryRecord,
    RemoveAccessControlEntryRecord,
    UserScramCredentialRecord,
    RemoveUserScramCredentialRecord,
    ClientQuotaRecord,
]

RECORD_CLASSES: tuple[type, ...] = (
    RegisterBrokerRecord,
    UnregisterBrokerRecord,
    TopicRecord,
    PartitionRecord,
    ConfigRecord,
    PartitionChangeRecord,
    FenceBrokerRecord,
    UnfenceBrokerRecord,
    RemoveTopicRecord,
    FeatureLevelRecord,
    ProducerIdsRecord,
    BrokerRegistrationChangeRecord,
    NoOpRecord,
    AccessControlEntryRecord,
    RemoveAccessControlEntryRecord,
    UserScramCredentialRecord,
    RemoveUserScramCredentialRecord,
    ClientQuotaRecord,
)

RECORD_CLASS_BY_API_KEY: dict[int, type] = {cls.API_KEY: cls for cls in RECORD_CLASSES}
