"""Our declarations match Kafka's reference definitions, field by field, at every version."""

from __future__ import annotations

from typing import Any

import pytest

from clients.protocol import APIS, SUPPORTED_VERSIONS, ApiKey, ZERO_UUID
from clients.protocol.compiler import field_default
from clients.protocol.schema import Array, Field, Struct, in_versions
from tests.unit.clients.protocol.kafka_reference import (in_range, load_message, parse_range,
    snake_case)

# The versions the project decided to support (the brief), per API.
WANTED_VERSIONS: dict[str, tuple[int, int]] = {
    "ApiVersions": (0, 3), "Metadata": (0, 12), "Produce": (3, 9), "Fetch": (4, 12),
    "ListOffsets": (1, 7), "OffsetForLeaderEpoch": (2, 4), "FindCoordinator": (0, 4),
    "JoinGroup": (0, 9), "SyncGroup": (0, 5), "Heartbeat": (0, 4), "LeaveGroup": (0, 5),
    "OffsetCommit": (2, 9), "OffsetFetch": (1, 9), "ListGroups": (0, 4),
    "DescribeGroups": (0, 5), "DeleteGroups": (0, 2), "OffsetDelete": (0, 0), "CreateTopics": (2, 7),
    "DeleteTopics": (1, 6), "CreatePartitions": (0, 3), "DescribeConfigs": (1, 4),
    "IncrementalAlterConfigs": (0, 1), "AlterConfigs": (0, 2), "DescribeCluster": (0, 1), "InitProducerId": (0, 4),
    "DeleteRecords": (0, 2), "SaslHandshake": (0, 1), "SaslAuthenticate": (0, 2),
    "WriteTxnMarkers": (0, 1), "DescribeProducers": (0, 0),
    "DescribeAcls": (0, 3), "CreateAcls": (0, 3), "DeleteAcls": (0, 3),
    "DescribeUserScramCredentials": (0, 0), "AlterUserScramCredentials": (0, 0),
    "ElectLeaders": (0, 2), "DescribeLogDirs": (1, 4),
}
WANTED_VERSIONS.update({
    "AddPartitionsToTxn": (0, 5), "AddOffsetsToTxn": (0, 4), "EndTxn": (0, 4), "TxnOffsetCommit": (0, 4),
    "DescribeTransactions": (0, 0), "ListTransactions": (0, 1),
})
WANTED_VERSIONS.update({"ConsumerGroupHeartbeat": (0, 1), "ConsumerGroupDescribe": (0, 0)})
WANTED_VERSIONS.update({"AlterPartitionReassignments": (0, 0), "ListPartitionReassignments": (0, 0)})
WANTED_VERSIONS.update({
    "DescribeClientQuotas": (0, 1), "AlterClientQuotas": (0, 1), "DescribeTopicPartitions": (0, 0),
})
# Controller RPCs: every version the reference declares valid.
ALL_REFERENCE_VERSIONS = (
    "BrokerRegistration", "BrokerHeartbeat", "AlterPartition", "DescribeQuorum", "AllocateProducerIds",
    "UnregisterBroker",
)

_INT_TYPES = {"int8", "int16", "uint16", "int32", "uint32", "int64"}


def _reference_default(ftype: str, raw: Any) -> Any:
    """Kafka's effective default of a reference field, in our Python representation."""
    if isinstance(raw, bool):
        raw = "true" if raw else "false"
    raw = None if raw is None else str(raw)
    if raw == "null":
        return None
    if ftype.startswith("[]"):
        return []
    if ftype in _INT_TYPES:
        return int(raw, 0) if raw else 0
    if ftype == "bool":
        return raw == "true"
    if ftype == "float64":
        return float(raw) if raw else 0.0
    if ftype == "string":
        return raw or ""
    if ftype == "bytes":
        return b""
    if ftype == "records":
        return None
    if ftype == "uuid":
        return ZERO_UUID
    return "<struct>"


def reference_tree(fields: list[dict], version: int, commons: dict[str, dict]) -> list[tuple]:
    tree = []
    for f in fields:
        if not in_range(f["versions"], version):
            continue
        ftype = f["type"]
        base = ftype[2:] if ftype.startswith("[]") else ftype
        children: Any = None
        if "fields" in f:
            children = (base, reference_tree(f["fields"], version, commons))
        elif base in commons:
            children = (base, reference_tree(commons[base]["fields"], version, commons))
        type_name = ("[]" if ftype.startswith("[]") else "") + ("struct" if children else base)
        tagged = int(f["tag"]) if in_range(f.get("taggedVersions"), version) else None
        default = None if children and not ftype.startswith("[]") else _reference_default(ftype, f.get("default"))
        tree.append((
            snake_case(f["name"]), type_name, in_range(f.get("nullableVersions"), version),
            tagged, default, bool(f.get("ignorable", False)), f.get("flexibleVersions"), children,
        ))
    return tree


def our_tree(fields: tuple[Field, ...], version: int) -> list[tuple]:
    tree = []
    for f in fields:
        if not in_versions(f.versions, version):
            continue
        ftype = f.type
        is_array = isinstance(ftype, Array)
        elem = ftype.of if is_array else ftype
        children: Any = None
        if isinstance(elem, Struct):
            children = (elem.name, our_tree(elem.fields, version))
        type_name = ("[]" if is_array else "") + ("struct" if children else elem)
        tagged = f.tag if in_versions(f.tagged, version) else None
        default = None if children and not is_array else field_default(f)
        tree.append((
            f.name, type_name, in_versions(f.nullable, version), tagged, default,
            f.ignorable, f.flexible, children,
        ))
    return tree


def _cases() -> list[Any]:
    return [
        pytest.param(api.name, version, direction, id=f"{api.name}-v{version}-{direction}")
        for api in APIS.values()
        for version in range(api.versions[0], api.versions[1] + 1)
        for direction in ("Request", "Response")
    ]


@pytest.mark.parametrize(("api_name", "version", "direction"), _cases())
def test_field_tree_matches_reference(api_name: str, version: int, direction: str) -> None:
    api = next(a for a in APIS.values() if a.name == api_name)
    reference = load_message(api_name + direction)
    assert reference["apiKey"] == api.key
    assert reference["type"] == direction.lower()
    assert in_range(reference["validVersions"], version)
    for probe in range(0, 20):
        assert in_versions(api.flexible, probe) == in_range(reference["flexibleVersions"], probe)
    commons = {s["name"]: s for s in reference.get("commonStructs", [])}
    ours = our_tree(api.request if direction == "Request" else api.response, version)
    assert ours == reference_tree(reference["fields"], version, commons)


@pytest.mark.parametrize("api_name", sorted(WANTED_VERSIONS) + list(ALL_REFERENCE_VERSIONS))
def test_declared_versions_match_the_supported_list(api_name: str) -> None:
    api = next((a for a in APIS.values() if a.name == api_name), None)
    assert api is not None, f"{api_name} is not declared"
    valid = [parse_range(load_message(api_name + d)["validVersions"]) for d in ("Request", "Response")]
    low = max(v[0] for v in valid)
    high = min(v[1] for v in valid)
    if api_name in WANTED_VERSIONS:
        low = max(low, WANTED_VERSIONS[api_name][0])
        high = min(high, WANTED_VERSIONS[api_name][1])
    assert api.versions == (low, high)
    assert SUPPORTED_VERSIONS[ApiKey(api.key)] == (low, high)


@pytest.mark.parametrize("api_name", sorted(WANTED_VERSIONS))
def test_every_wanted_version_is_declared_and_checked(api_name: str) -> None:
    # The comparison above clamps to the reference's range; this one cannot shrink the list.
    api = next(a for a in APIS.values() if a.name == api_name)
    low, high = WANTED_VERSIONS[api_name]
    assert api.versions[0] <= low and high <= api.versions[1]
    checked = {p.values[:2] for p in _cases()}
    assert all((api_name, v) in checked for v in range(low, high + 1))


def test_every_declared_api_is_in_the_supported_list() -> None:
    assert {a.name for a in APIS.values()} == set(WANTED_VERSIONS) | set(ALL_REFERENCE_VERSIONS)


@pytest.mark.parametrize("api_key", sorted(SUPPORTED_VERSIONS))
def test_each_advertised_range_lies_within_the_definitions(api_key: ApiKey) -> None:
    """The hand-written table (clients/protocol/supported.py) never claims a version Kafka's
    definitions do not define, in either direction."""
    low, high = SUPPORTED_VERSIONS[api_key]
    name = APIS[api_key].name
    for direction in ("Request", "Response"):
        reference = load_message(name + direction)
        assert reference["apiKey"] == api_key
        valid = parse_range(reference["validVersions"])
        assert valid is not None and valid[0] <= low <= high <= valid[1], (name, direction)


def test_every_api_the_controller_listener_routes_is_advertised() -> None:
    """A routed API without a range would never be advertised (ApiVersions lists the routed
    APIs that have one), nor could its requests be decoded."""
    from broker.apis.request import RequestRouter
    from broker.controller_server.quorum_controller import QuorumController

    class AnyHandler:
        def __getattr__(self, name: str) -> Any:
            return lambda *args: None

    router = RequestRouter()
    QuorumController.register(AnyHandler(), router)  # type: ignore[arg-type]
    assert router.api_keys() and router.api_keys() <= set(SUPPORTED_VERSIONS)
