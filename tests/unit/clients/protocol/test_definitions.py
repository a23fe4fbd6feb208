"""The committed protocol description: current, complete, shipped, and its loaders."""

from __future__ import annotations

import tomllib
from importlib import resources
from typing import Iterator

import pytest

import clients.protocol.definitions as definitions
from clients.protocol import APIS
from clients.protocol.definitions import (
    DESCRIPTION_FILE,
    FORMAT_VERSION,
    DescriptionFormatError,
    message_definition,
    message_names,
    metadata_record_definition,
    metadata_record_names,
)
from clients.protocol.definitions.derive import derive_definition, render
from metadata.records import RECORD_CLASSES
from tests.conftest import REPO_ROOT

TEXT = resources.files(definitions).joinpath(DESCRIPTION_FILE).read_text(encoding="utf-8")


def every_definition() -> Iterator[dict]:
    yield from (message_definition(name) for name in message_names())
    yield from (metadata_record_definition(name) for name in metadata_record_names())


def test_the_committed_file_is_what_the_current_deriver_writes() -> None:
    """Its format is the one the code reads, each definition is already in the deriver's normal
    form, and the deriver lays the whole out byte for byte as committed (a change to the
    deriver's output shows here; re-derive with scripts/derive-protocol and commit)."""
    entries = {"messages": {}, "metadataRecords": {}}
    for definition in every_definition():
        assert derive_definition(definition, definition["name"]) == definition
        section = "metadataRecords" if definition["type"] == "metadata" else "messages"
        entries[section][definition["name"]] = definition
    assert render({"formatVersion": FORMAT_VERSION, **entries}) == TEXT


def test_it_holds_every_kafka_message_and_record_the_project_uses() -> None:
    names = set(message_names())
    assert {"RequestHeader", "ResponseHeader"} <= names
    assert {f"{api.name}{d}" for api in APIS.values() for d in ("Request", "Response")} <= names
    assert {cls.__name__ for cls in RECORD_CLASSES} <= set(metadata_record_names())
    assert len(names) > 180 and len(metadata_record_names()) > 20
    assert len(TEXT) < 200_000  # compact: facts only


def test_a_definition_reads_as_kafka_defines_it() -> None:
    fetch = message_definition("FetchRequest")
    assert (fetch["apiKey"], fetch["type"], fetch["flexibleVersions"]) == (1, "request", "12+")
    assert "about" not in str(fetch)
    cluster_id = fetch["fields"][0]
    assert cluster_id == {"name": "ClusterId", "type": "string", "versions": "12+",
                          "nullableVersions": "12+", "default": "null", "taggedVersions": "12+",
                          "tag": 0, "ignorable": True}
    change = metadata_record_definition("PartitionChangeRecord")
    assert (change["apiKey"], change["type"]) == (5, "metadata")
    assert message_definition("RequestHeader")["fields"][3]["flexibleVersions"] == "none"


def test_loaders_hand_out_copies_and_name_what_is_missing() -> None:
    message_definition("FetchRequest")["fields"].clear()
    assert message_definition("FetchRequest")["fields"]
    with pytest.raises(KeyError, match="NoSuchRequest"):
        message_definition("NoSuchRequest")
    with pytest.raises(KeyError, match="FetchRequest"):
        metadata_record_definition("FetchRequest")


def test_a_file_of_another_format_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(definitions, "FORMAT_VERSION", FORMAT_VERSION + 1)
    definitions._description.cache_clear()
    try:
        with pytest.raises(DescriptionFormatError, match="scripts/derive-protocol"):
            message_definition("FetchRequest")
    finally:
        definitions._description.cache_clear()


def test_wheels_carry_the_file() -> None:
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    package_data = pyproject["tool"]["setuptools"]["package-data"]
    assert DESCRIPTION_FILE in package_data["clients.protocol.definitions"]
