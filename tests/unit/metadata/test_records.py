"""Metadata records: fields match Kafka's reference definitions; msgpack round trip; bad input."""

from __future__ import annotations

import dataclasses
import re
import uuid

import msgpack
import pytest

from clients.protocol.definitions import metadata_record_definition
from metadata.acl_records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from metadata.client_quotas import ClientQuotaRecord, EntityData
from metadata.errors import MetadataRecordError
from metadata.record_codec import decode_record, encode_record
from metadata.record_generator import MODULE_PATH, RECORD_VERSIONS, is_current, render_module
from metadata.scram import RemoveUserScramCredentialRecord, UserScramCredentialRecord
from metadata.records import (
    RECORD_CLASSES,
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
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

TID = uuid.UUID("6f1c2a8e-52b1-4d8f-9a57-3c1de0f9a001")


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def in_versions(spec: str | None, version: int) -> bool:
    if spec is None:
        return False
    if spec.endswith("+"):
        return version >= int(spec[:-1])
    low, _, high = spec.partition("-")
    return int(low) <= version <= int(high or low)


def fields_at(spec_fields: list[dict], version: int) -> dict[str, dict]:
    return {snake(f["name"]): f for f in spec_fields if in_versions(f.get("versions"), version)}


@pytest.mark.parametrize("cls", RECORD_CLASSES, ids=lambda c: c.__name__)
def test_record_fields_match_reference_definition(cls: type) -> None:
    spec = metadata_record_definition(cls.__name__)
    assert spec["apiKey"] == cls.API_KEY
    assert in_versions(spec["validVersions"], cls.VERSION)
    expected = fields_at(spec["fields"], cls.VERSION)
    assert [f.name for f in dataclasses.fields(cls)] == list(expected)


@pytest.mark.parametrize(
    ("nested", "field_name"), [(BrokerEndpoint, "EndPoints"), (BrokerFeature, "Features")]
)
def test_register_broker_nested_fields_match_reference(nested: type, field_name: str) -> None:
    spec = metadata_record_definition("RegisterBrokerRecord")
    (parent,) = [f for f in spec["fields"] if f["name"] == field_name]
    expected = fields_at(parent["fields"], RegisterBrokerRecord.VERSION)
    assert [f.name for f in dataclasses.fields(nested)] == list(expected)


def test_client_quota_entity_fields_match_reference() -> None:
    spec = metadata_record_definition("ClientQuotaRecord")
    (parent,) = [f for f in spec["fields"] if f["name"] == "Entity"]
    expected = fields_at(parent["fields"], ClientQuotaRecord.VERSION)
    assert [f.name for f in dataclasses.fields(EntityData)] == list(expected)


SAMPLES = [
    RegisterBrokerRecord(
        broker_id=3,
        incarnation_id=uuid.uuid4(),
        broker_epoch=42,
        end_points=(BrokerEndpoint("PLAINTEXT", "h1", 9092, 0), BrokerEndpoint("CONTROLLER", "h1", 9093, 0)),
        features=(BrokerFeature("metadata.version", 1, 20),),
        rack="r1",
        fenced=False,
        in_controlled_shutdown=True,
    ),
    UnregisterBrokerRecord(broker_id=3, broker_epoch=42),
    TopicRecord(name="orders", topic_id=TID),
    PartitionRecord(partition_id=2, topic_id=TID, replicas=(1, 2, 3), isr=(1, 2), leader=1, leader_epoch=4, partition_epoch=9),
    ConfigRecord(resource_type=2, resource_name="orders", name="retention.ms", value="1000"),
    ConfigRecord(resource_type=4, resource_name="", name="x", value=None),
    PartitionChangeRecord(partition_id=0, topic_id=TID),
    PartitionChangeRecord(partition_id=0, topic_id=TID, isr=(1,), leader=-1, replicas=(1, 2), removing_replicas=(), adding_replicas=(2,), leader_recovery_state=1),
    FenceBrokerRecord(id=1, epoch=5),
    UnfenceBrokerRecord(id=1, epoch=5),
    RemoveTopicRecord(topic_id=TID),
    FeatureLevelRecord(name="metadata.version", feature_level=20),
    ProducerIdsRecord(broker_id=1, broker_epoch=5, next_producer_id=2000),
    BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=5, fenced=-1, in_controlled_shutdown=1),
    NoOpRecord(),
    AccessControlEntryRecord(id=TID, resource_type=2, resource_name="orders-", pattern_type=4,
                             principal="User:alice", host="*", operation=3, permission_type=3),
    RemoveAccessControlEntryRecord(id=TID),
    UserScramCredentialRecord(name="alice", mechanism=2, salt=b"s", stored_key=b"k",
                              server_key=b"v", iterations=4096),
    RemoveUserScramCredentialRecord(name="alice", mechanism=2),
    ClientQuotaRecord(entity=(EntityData("client-id", None), EntityData("user", "alice")),
                      key="producer_byte_rate", value=1024.0, remove=False),
]


def test_every_record_class_has_a_sample() -> None:
    assert {type(s) for s in SAMPLES} == set(RECORD_CLASSES)


@pytest.mark.parametrize("record", SAMPLES, ids=lambda r: type(r).__name__)
def test_encode_decode_round_trip(record: object) -> None:
    data = encode_record(record)  # type: ignore[arg-type]
    assert decode_record(data) == record


def test_encoding_is_type_version_fields_with_uuid_as_16_bytes() -> None:
    api_key, version, fields = msgpack.unpackb(encode_record(TopicRecord(name="t", topic_id=TID)))
    assert (api_key, version) == (2, 0)
    assert fields == {"name": "t", "topic_id": TID.bytes}


def test_older_version_without_later_fields_decodes_with_defaults() -> None:
    fields = {
        "broker_id": 1,
        "incarnation_id": TID.bytes,
        "broker_epoch": 7,
        "end_points": [],
        "features": [],
        "rack": None,
        "fenced": True,
    }
    record = decode_record(msgpack.packb([0, 0, fields]))
    assert isinstance(record, RegisterBrokerRecord)
    assert record.in_controlled_shutdown is False


BAD_INPUTS = {
    "not msgpack": b"\xc1\xc1",
    "truncated": encode_record(TopicRecord(name="t", topic_id=TID))[:-3],
    "not a triple": msgpack.packb([2, 0]),
    "unknown type": msgpack.packb([99, 0, {}]),
    "future version": msgpack.packb([2, 1, {"name": "t", "topic_id": TID.bytes}]),
    "fields not a map": msgpack.packb([2, 0, ["t", TID.bytes]]),
    "missing field": msgpack.packb([2, 0, {"name": "t"}]),
    "unknown field": msgpack.packb([2, 0, {"name": "t", "topic_id": TID.bytes, "extra": 1}]),
    "short uuid": msgpack.packb([2, 0, {"name": "t", "topic_id": b"\x00" * 15}]),
    "wrong scalar type": msgpack.packb([7, 0, {"id": "1", "epoch": 5}]),
    "bool for int": msgpack.packb([7, 0, {"id": True, "epoch": 5}]),
    "list item type": msgpack.packb([5, 0, {"partition_id": 0, "topic_id": TID.bytes, "isr": ["a"]}]),
    "trailing garbage": encode_record(NoOpRecord()) + b"\x00",
}


@pytest.mark.parametrize("data", BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
def test_bad_input_raises_metadata_record_error(data: bytes) -> None:
    with pytest.raises(MetadataRecordError):
        decode_record(data)


def test_the_record_classes_are_what_the_generator_writes() -> None:
    """metadata/record_classes.py is generated from the committed description: after changing
    the description or RECORD_VERSIONS, run scripts/generate-messages and commit."""
    assert is_current()


def test_no_record_class_is_written_by_hand() -> None:
    """Every record class comes from the generated module, and none is defined elsewhere."""
    assert {cls.__module__ for cls in RECORD_CLASSES} == {"metadata.record_classes"}
    assert {cls.__name__ for cls in RECORD_CLASSES} == set(RECORD_VERSIONS)
    for cls in RECORD_CLASSES:
        assert cls.VERSION == RECORD_VERSIONS[cls.__name__]
    repository = MODULE_PATH.parent.parent
    definitions = {f"class {name}{end}" for name in RECORD_VERSIONS for end in ("(", ":")}
    written = [f"{path.relative_to(repository)}: {line}"
               for package in ("metadata", "broker", "clients", "kraft")
               for path in sorted((repository / package).rglob("*.py")) if path != MODULE_PATH
               for line in path.read_text(encoding="utf-8").splitlines()
               if any(line.startswith(d) for d in definitions)]
    assert written == []


def test_the_version_table_decides_the_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(RECORD_VERSIONS, "RegisterBrokerRecord", 2)
    assert "is_migrating_zk_broker: bool = False" in render_module()
    assert not is_current()


def test_credentials_stay_out_of_repr() -> None:
    record = UserScramCredentialRecord(name="alice", mechanism=2, salt=b"salt",
                                       stored_key=b"stored", server_key=b"server",
                                       iterations=4096)
    assert "stored" not in repr(record) and "server" not in repr(record)
    assert "alice" in repr(record)


def test_encoding_a_foreign_object_raises() -> None:
    with pytest.raises(MetadataRecordError):
        encode_record(object())  # type: ignore[arg-type]
