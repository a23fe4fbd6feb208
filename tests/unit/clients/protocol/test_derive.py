"""The deriver of the protocol description, on small Kafka-style definitions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from clients.protocol.definitions import FORMAT_VERSION
from clients.protocol.definitions.derive import (
    DefinitionError,
    derive,
    derive_definition,
    read_definition,
    render,
    strip_comments,
)

REQUEST = """// Licensed to someone.
{
  "apiKey": 90,
  "type": "request",
  "listeners": ["controller", "broker"],
  "name": "PingRequest",
  // Version 1 adds Tags.
  "validVersions": "0-2",
  "deprecatedVersions": "0",
  "flexibleVersions": "1+",
  "latestVersionUnstable": false,
  "fields": [
    { "name": "Url", "type": "string", "versions": "0+", "default": "http://a//b",
      "about": "A string with // inside, which is not a comment." }, // a trailing comment
    { "name": "Timeout", "type": "int32", "versions": "0+", "default": -1, "ignorable": false,
      "about": "The timeout." },
    { "name": "Strict", "type": "bool", "versions": "1+", "default": true, "ignorable": true,
      "about": "Strict?" },
    { "name": "ClusterId", "type": "string", "versions": "1+", "nullableVersions": "1+",
      "default": "null", "taggedVersions": "1+", "tag": "0", "about": "Tagged." },
    { "name": "Targets", "type": "[]Target", "versions": "0+", "about": "Nested.", "fields": [
      { "name": "Name", "type": "string", "versions": "0+", "mapKey": true,
        "entityType": "topicName", "about": "The name \\"quoted\\"." },
      { "name": "Ends", "type": "[]Endpoint", "versions": "2+", "about": "Common." }
    ]}
  ],
  "commonStructs": [
    { "name": "Endpoint", "versions": "2+", "fields": [
      { "name": "Port", "type": "uint16", "versions": "2+", "about": "The port." },
      { "name": "Records", "type": "records", "versions": "2+", "zeroCopy": true,
        "nullableVersions": "2+", "about": "Bytes." }
    ]}
  ]
}
"""

RECORD = """{
  "apiKey": 3, "type": "metadata", "name": "PingRecord", "validVersions": "0",
  "flexibleVersions": "0+",
  "fields": [ { "name": "Id", "type": "uuid", "versions": "0+", "about": "Its id." } ]
}
"""

PING_REQUEST = {
    "apiKey": 90, "name": "PingRequest", "type": "request", "listeners": ["broker", "controller"],
    "validVersions": "0-2", "deprecatedVersions": "0", "flexibleVersions": "1+",
    "fields": [
        {"name": "Url", "type": "string", "versions": "0+", "default": "http://a//b"},
        {"name": "Timeout", "type": "int32", "versions": "0+", "default": "-1"},
        {"name": "Strict", "type": "bool", "versions": "1+", "default": "true", "ignorable": True},
        {"name": "ClusterId", "type": "string", "versions": "1+", "nullableVersions": "1+",
         "default": "null", "taggedVersions": "1+", "tag": 0},
        {"name": "Targets", "type": "[]Target", "versions": "0+", "fields": [
            {"name": "Name", "type": "string", "versions": "0+", "mapKey": True,
             "entityType": "topicName"},
            {"name": "Ends", "type": "[]Endpoint", "versions": "2+"},
        ]},
    ],
    "commonStructs": [{"name": "Endpoint", "versions": "2+", "fields": [
        {"name": "Port", "type": "uint16", "versions": "2+"},
        {"name": "Records", "type": "records", "versions": "2+", "nullableVersions": "2+",
         "zeroCopy": True},
    ]}],
}


def write_sources(root: Path, messages: dict[str, str],
                  records: dict[str, str]) -> tuple[Path, Path]:
    for folder, files in (("message", messages), ("metadata", records)):
        (root / folder).mkdir(parents=True)
        for name, text in files.items():
            (root / folder / name).write_text(text)
    (root / "message" / "README.md").write_text("Not a definition.")
    return root / "message", root / "metadata"


def test_comments_go_and_strings_keep_their_slashes() -> None:
    text = '{"a": "x//y", // gone\n "b": "q\\"//r"} // gone too'
    assert json.loads(strip_comments(text)) == {"a": "x//y", "b": 'q"//r'}
    assert strip_comments("// only a comment") == ""


def test_a_definition_keeps_its_facts_in_normal_form(tmp_path: Path) -> None:
    messages, records = write_sources(tmp_path, {"PingRequest.json": REQUEST},
                                      {"PingRecord.json": RECORD})
    description = derive(messages, records)
    assert description["formatVersion"] == FORMAT_VERSION
    assert description["messages"] == {"PingRequest": PING_REQUEST}
    assert description["metadataRecords"]["PingRecord"] == {
        "apiKey": 3, "name": "PingRecord", "type": "metadata", "validVersions": "0",
        "flexibleVersions": "0+", "fields": [{"name": "Id", "type": "uuid", "versions": "0+"}]}
    text = render(description)
    assert "about" not in text and "Licensed" not in text and "Version 1 adds" not in text
    assert json.loads(text) == description


def test_the_output_is_the_same_bytes_whatever_the_order_of_keys_and_files(tmp_path: Path) -> None:
    record = json.loads(strip_comments(RECORD))
    other = json.dumps({"name": "OtherRecord", **{k: v for k, v in record.items() if k != "name"}})
    first = derive(*write_sources(tmp_path / "a", {"PingRequest.json": REQUEST},
                                  {"PingRecord.json": RECORD, "OtherRecord.json": other}))
    reordered = json.dumps(dict(reversed(json.loads(strip_comments(REQUEST)).items())), indent=1)
    second = derive(*write_sources(tmp_path / "b", {"PingRequest.json": reordered},
                                   {"Z.json": RECORD, "A.json": other}))
    assert render(first) == render(second)
    lines = render(first).splitlines()
    assert lines[0] == '{"formatVersion":%d,' % FORMAT_VERSION
    assert [line.split(":")[0] for line in lines if line.startswith('"')] == [
        '"messages"', '"PingRequest"', '"metadataRecords"', '"OtherRecord"', '"PingRecord"']


def test_a_derived_definition_derives_to_itself() -> None:
    assert derive_definition(PING_REQUEST, "PingRequest") == PING_REQUEST


@pytest.mark.parametrize(("change", "problem"), [
    ({"fields": [{"name": "A", "type": "int8", "versions": "0+", "newKey": 1}]},
     "unknown key newKey"),
    ({"fields": [{"name": "A", "type": "int8"}]}, "missing versions"),
    ({"fields": [{"name": "A", "type": "int8", "versions": "0+", "tag": 0}]},
     "tag and taggedVersions go together"),
    ({"fields": [{"name": "A", "type": "int8", "versions": "one"}]}, "not a version range"),
    ({"fields": [{"name": "A", "type": "int8", "versions": "0+", "ignorable": "yes"}]},
     "ignorable must be true or false"),
    ({"fields": [{"name": "A", "type": "int8", "versions": "0+", "default": [1]}]},
     "default must be"),
    ({"type": "gossip"}, "unknown message type"),
    ({"apiKey": "ninety"}, "apiKey must be an integer"),
    ({"validVersions": None}, "validVersions is not a version range"),
])
def test_unexpected_content_stops_the_derivation(change: dict, problem: str) -> None:
    source = {**json.loads(strip_comments(RECORD)), **change}
    with pytest.raises(DefinitionError, match=problem):
        derive_definition(source, "PingRecord.json")


def test_unreadable_sources_name_the_file(tmp_path: Path) -> None:
    (tmp_path / "Bad.json").write_text('{"name": "Bad", // unfinished')
    with pytest.raises(DefinitionError, match="Bad.json"):
        read_definition(tmp_path / "Bad.json")
    with pytest.raises(DefinitionError, match="not a directory"):
        derive(tmp_path / "missing", tmp_path)
    with pytest.raises(DefinitionError, match="no \\*.json definitions"):
        derive(*write_sources(tmp_path / "empty", {}, {"PingRecord.json": RECORD}))
    twice = write_sources(tmp_path / "twice", {"PingRequest.json": REQUEST},
                          {"A.json": RECORD, "B.json": RECORD})
    with pytest.raises(DefinitionError, match="a second definition of PingRecord"):
        derive(*twice)


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    from tests.conftest import REPO_ROOT

    return subprocess.run([str(REPO_ROOT / "scripts" / "derive-protocol"), *args],
                          capture_output=True, text=True, timeout=60, cwd="/",
                          env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"})


def test_the_script_writes_checks_and_fails_in_one_line(tmp_path: Path) -> None:
    messages, records = write_sources(tmp_path, {"PingRequest.json": REQUEST},
                                      {"PingRecord.json": RECORD})
    output = tmp_path / "out.json"
    args = ("--messages", str(messages), "--metadata", str(records), "--output", str(output))
    written = run_script(*args)
    assert written.returncode == 0, written.stderr
    assert "1 messages, 1 metadata records" in written.stdout
    assert output.read_text() == render(derive(messages, records))
    assert run_script(*args, "--check").returncode == 0
    output.write_text(output.read_text().replace('"0-2"', '"0-3"'))
    stale = run_script(*args, "--check")
    assert (stale.returncode, stale.stderr.count("\n")) == (1, 1)
    assert "is not current" in stale.stderr
    missing = run_script("--messages", str(tmp_path / "nowhere"), "--metadata", str(records))
    assert (missing.returncode, missing.stderr) == (
        1, f"derive-protocol: {tmp_path / 'nowhere'}: not a directory\n")
    usage = run_script("--metadata", str(records))
    assert usage.returncode == 2 and usage.stderr.count("\n") == 1 and "--messages" in usage.stderr
