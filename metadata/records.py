"""KRaft metadata records and what their values mean.

The classes are generated from Kafka's record definitions into `metadata.record_classes`
(`metadata.record_generator`, which also says which version of each record Raftka writes):
one frozen dataclass per record type, fields named by the snake_case of Kafka's names and
exactly those present at the class's `VERSION`, `API_KEY` Kafka's record type number, arrays
as tuples so records stay hashable.

What the records mean here, as in Kafka: a TopicRecord is followed by its PartitionRecords; a
PartitionChangeRecord carries only what changed (None, NO_LEADER_CHANGE and
NO_RECOVERY_STATE_CHANGE mean unchanged); a ConfigRecord with value None deletes the key;
RemoveTopicRecord deletes a topic with its partitions and configs; a FeatureLevelRecord of
level 0 removes the feature; a ProducerIdsRecord moves the start of the next producer id
block; a RegisterBrokerRecord replaces any earlier registration of the id; NoOpRecord only
advances the metadata offset.
"""

from __future__ import annotations

from typing import Union

from metadata.record_classes import (
    AccessControlEntryRecord,
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistrationChangeRecord,
    ClientQuotaRecord,
    ConfigRecord,
    EntityData,
    FeatureLevelRecord,
    FenceBrokerRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
)

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
