"""The tools a Kafka user reaches for on day one, against a real 3-node cluster started like
scripts/bootstrap-quorum: `topics --alter --config/--delete-config`, `--if-exists`,
`--if-not-exists`, `--topic` as a regex, `get-offsets` (kafka-get-offsets.sh) and
`delete-records` (kafka-delete-records.sh). Each is a `raftka` subprocess; output lines and
exit codes are Kafka's tools', and every error is one line on stderr with exit 1."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from cluster.launcher import ClusterInfo
from cluster.launcher.ports import free_ports
from tests.integration.quorum_helpers import produce
from tests.integration.test_cli_tools import cluster, raftka  # noqa: F401  (fixture)
from cluster.testing.waiting import wait_for

pytestmark = pytest.mark.slow

TOPIC_ERROR = "Error while executing topic command : "
OFFSETS_ERROR = "Error occurred: "


def one_error_line(result: subprocess.CompletedProcess[str], prefix: str) -> str:
    """The single stderr line of a failed command (exit 1, no traceback)."""
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(prefix), lines[0]
    return lines[0][len(prefix):]


def topics(cluster: ClusterInfo, *args: str) -> subprocess.CompletedProcess[str]:
    return raftka("topics", "--bootstrap-server", cluster.bootstrap_servers, *args)


def create(cluster: ClusterInfo, name: str, partitions: int) -> None:
    created = topics(cluster, "--create", "--topic", name, "--partitions", str(partitions),
                     "--replication-factor", "3")
    assert created.returncode == 0, created.stderr


def configs_of(cluster: ClusterInfo, topic: str) -> dict[str, str]:
    described = topics(cluster, "--describe", "--topic", topic)
    assert described.returncode == 0, described.stderr
    text = re.search(r"\tConfigs: (.*)$", described.stdout.splitlines()[0]).group(1)
    return dict(item.split("=", 1) for item in text.split(",") if item)


def dead_server() -> str:
    return f"127.0.0.1:{free_ports(1)[0]}"


# --- topics --------------------------------------------------------------------------------

def test_alter_sets_and_deletes_topic_configs(cluster: ClusterInfo) -> None:
    create(cluster, "cfg", 1)
    altered = topics(cluster, "--alter", "--topic", "cfg", "--config", "retention.ms=1000",
                     "--config", "max.message.bytes=2000")
    assert altered.returncode == 0, altered.stderr
    assert altered.stdout.splitlines() == ["Completed updating config for topic cfg."]
    wait_for(lambda: {"retention.ms": "1000", "max.message.bytes": "2000"}.items()
             <= configs_of(cluster, "cfg").items(), "the new configs in --describe", 15)

    removed = topics(cluster, "--alter", "--topic", "cfg", "--delete-config", "retention.ms")
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.splitlines() == ["Completed updating config for topic cfg."]
    wait_for(lambda: "retention.ms" not in configs_of(cluster, "cfg"),
             "retention.ms back to its default", 15)
    assert configs_of(cluster, "cfg")["max.message.bytes"] == "2000"

    bad_value = topics(cluster, "--alter", "--topic", "cfg", "--config", "retention.ms=soon")
    assert "retention.ms" in one_error_line(bad_value, TOPIC_ERROR)
    unknown_key = topics(cluster, "--alter", "--topic", "cfg", "--config", "no.such.key=1")
    assert "no.such.key" in one_error_line(unknown_key, TOPIC_ERROR)
    nothing = topics(cluster, "--alter", "--topic", "cfg")
    assert one_error_line(nothing, TOPIC_ERROR) == (
        "--alter needs --partitions, --config or --delete-config")
    delete_on_create = topics(cluster, "--create", "--topic", "x", "--delete-config", "a")
    assert one_error_line(delete_on_create, TOPIC_ERROR) == (
        "--delete-config can only be used with --alter")


def test_if_exists_and_if_not_exists(cluster: ClusterInfo) -> None:
    first = topics(cluster, "--create", "--topic", "maybe", "--if-not-exists")
    assert first.returncode == 0 and first.stdout.strip() == "Created topic maybe."
    again = topics(cluster, "--create", "--topic", "maybe", "--if-not-exists")
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")

    for action in (["--describe"], ["--delete"], ["--alter", "--partitions", "4"],
                   ["--alter", "--config", "retention.ms=1"]):
        quiet = topics(cluster, *action, "--topic", "absent", "--if-exists")
        assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", ""), action
        loud = topics(cluster, *action, "--topic", "absent")
        assert one_error_line(loud, TOPIC_ERROR) == "Topic 'absent' does not exist as expected"

    misplaced = topics(cluster, "--create", "--topic", "maybe", "--if-exists")
    assert "--if-exists" in one_error_line(misplaced, TOPIC_ERROR)
    misplaced = topics(cluster, "--delete", "--topic", "maybe", "--if-not-exists")
    assert "--if-not-exists" in one_error_line(misplaced, TOPIC_ERROR)


def test_topic_is_a_regex_for_describe_alter_and_delete(cluster: ClusterInfo) -> None:
    for name in ("re-a", "re-b", "re-bb", "rex"):
        create(cluster, name, 1)
    described = topics(cluster, "--describe", "--topic", "re-.")
    assert described.returncode == 0, described.stderr
    headers = [line.split("\t")[0] for line in described.stdout.splitlines()
               if line.startswith("Topic: ")]
    assert headers == ["Topic: re-a", "Topic: re-b"]  # matched whole: not re-bb, not rex
    listed = topics(cluster, "--describe", "--topic", "re-a,rex")  # a comma means "or"
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()
            if line.startswith("Topic: ")] == ["Topic: re-a", "Topic: rex"]

    altered = topics(cluster, "--alter", "--topic", "re-b.*", "--partitions", "2")
    assert altered.returncode == 0, altered.stderr

    def both_grown() -> bool:
        out = topics(cluster, "--describe", "--topic", "re-b.*").stdout
        return out.count("PartitionCount: 2") == 2
    wait_for(both_grown, "re-b and re-bb with 2 partitions", 15)

    deleted = topics(cluster, "--delete", "--topic", "re-.*")
    assert deleted.returncode == 0, deleted.stderr

    def remaining() -> list[str]:
        return [t for t in topics(cluster, "--list").stdout.split() if t.startswith("re")]
    wait_for(lambda: remaining() == ["rex"], "re-a, re-b and re-bb deleted, rex kept", 15)

    bad = topics(cluster, "--describe", "--topic", "re-(")
    assert one_error_line(bad, TOPIC_ERROR).startswith("Invalid topic regex 're-(': ")
    nowhere = dead_server()
    unreachable = raftka("topics", "--bootstrap-server", nowhere, "--describe",
                         "--timeout-ms", "500")
    assert f"no broker reachable at {nowhere}: " in one_error_line(unreachable, TOPIC_ERROR)


# --- get-offsets ---------------------------------------------------------------------------

def get_offsets(cluster: ClusterInfo, *args: str) -> subprocess.CompletedProcess[str]:
    return raftka("get-offsets", "--bootstrap-server", cluster.bootstrap_servers, *args)


def offsets(cluster: ClusterInfo, *args: str) -> list[str]:
    result = get_offsets(cluster, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def test_get_offsets_prints_kafka_lines_by_time_topic_and_partition(
        cluster: ClusterInfo) -> None:
    create(cluster, "go", 3)
    produce(cluster.bootstrap_servers, "go", [b"first-%d" % i for i in range(30)], 3)
    # Every record of the second batch is stamped after `between`, every one of the first
    # before it (the same clock stamps them all).
    before = now_ms()
    wait_for(lambda: now_ms() > before + 5, "the clock to move on", 5)
    between = now_ms()
    wait_for(lambda: now_ms() > between + 5, "the clock to move on", 5)
    produce(cluster.bootstrap_servers, "go", [b"second-%d" % i for i in range(30)], 3)

    assert offsets(cluster, "--topic", "go") == ["go:0:20", "go:1:20", "go:2:20"]
    for latest in ("-1", "latest"):
        assert offsets(cluster, "--topic", "go", "--time", latest) == [
            "go:0:20", "go:1:20", "go:2:20"]
    for earliest in ("-2", "earliest"):
        assert offsets(cluster, "--topic", "go", "--time", earliest) == [
            "go:0:0", "go:1:0", "go:2:0"]
    assert offsets(cluster, "--topic", "go", "--time", str(between)) == [
        "go:0:10", "go:1:10", "go:2:10"]
    for max_timestamp in ("-3", "max-timestamp"):
        for line in offsets(cluster, "--topic", "go", "--time", max_timestamp):
            topic, partition, offset = line.split(":")
            assert topic == "go" and 10 <= int(offset) < 20, line  # a second-batch record
    # No record at or after the time: the partition is left out, as Kafka's tool does.
    assert offsets(cluster, "--topic", "go", "--time", str(now_ms() + 3_600_000)) == []

    assert offsets(cluster, "--topic", "go", "--partitions", "0,2") == ["go:0:20", "go:2:20"]
    assert offsets(cluster, "--topic", "go", "--partitions", "1-2") == ["go:1:20", "go:2:20"]
    assert offsets(cluster, "--topic", "g.") == ["go:0:20", "go:1:20", "go:2:20"]
    everything = offsets(cluster)
    assert {"go:0:20", "go:1:20", "go:2:20"} <= set(everything)
    assert all(re.fullmatch(r"[\w.-]+:\d+:\d+", line) for line in everything), everything


def test_get_offsets_errors_are_one_line(cluster: ClusterInfo) -> None:
    create(cluster, "go-errors", 2)
    no_match = "Could not match any topic-partitions with the specified filters"
    assert one_error_line(get_offsets(cluster, "--topic", "absent"), OFFSETS_ERROR) == no_match
    assert one_error_line(get_offsets(cluster, "--topic", "go-errors", "--partitions", "9"),
                          OFFSETS_ERROR) == no_match
    bad_time = get_offsets(cluster, "--topic", "go-errors", "--time", "yesterday")
    assert one_error_line(bad_time, OFFSETS_ERROR).startswith(
        "Malformed time argument yesterday.")
    bad_partitions = get_offsets(cluster, "--topic", "go-errors", "--partitions", "1-x")
    assert "1-x" in one_error_line(bad_partitions, OFFSETS_ERROR)
    bad_regex = get_offsets(cluster, "--topic", "go-[")
    assert one_error_line(bad_regex, OFFSETS_ERROR).startswith("Invalid topic regex")
    without_topic = get_offsets(cluster, "--partitions", "0")
    assert one_error_line(without_topic, OFFSETS_ERROR) == (
        "--partitions can only be used with --topic")
    nowhere = dead_server()
    unreachable = raftka("get-offsets", "--bootstrap-server", nowhere, "--timeout-ms", "500")
    assert f"no broker reachable at {nowhere}: " in one_error_line(unreachable, OFFSETS_ERROR)


# --- delete-records ------------------------------------------------------------------------

def delete_records(cluster: ClusterInfo, tmp_path: Path, document: object,
                   servers: str | None = None) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "offsets.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    bounded = ["--timeout-ms", "500"] if servers else []
    return raftka("delete-records", "--bootstrap-server", servers or cluster.bootstrap_servers,
                  "--offset-json-file", str(path), *bounded)


def spec(*entries: tuple[str, int, int]) -> dict[str, object]:
    return {"partitions": [{"topic": t, "partition": p, "offset": o} for t, p, o in entries],
            "version": 1}


def test_delete_records_moves_the_log_start_and_prints_kafka_output(
        cluster: ClusterInfo, tmp_path: Path) -> None:
    create(cluster, "dr", 2)
    produce(cluster.bootstrap_servers, "dr", [b"v%d" % i for i in range(20)], 2)
    done = delete_records(cluster, tmp_path, spec(("dr", 0, 3), ("dr", 1, -1)))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Executing records delete operation",
        "Records delete operation completed:",
        "partition: dr-0\tlow_watermark: 3",
        "partition: dr-1\tlow_watermark: 10",  # -1: up to the high watermark
    ]
    assert offsets(cluster, "--topic", "dr", "--time", "earliest") == ["dr:0:3", "dr:1:10"]
    # The consumer sees only what is left.
    left = raftka("console-consumer", "--bootstrap-server", cluster.bootstrap_servers,
                  "--topic", "dr", "--from-beginning", "--max-messages", "7",
                  "--timeout-ms", "20000")
    assert left.returncode == 0, left.stderr
    assert sorted(left.stdout.split()) == sorted("v%d" % i for i in range(6, 20, 2))


def test_delete_records_reports_each_partition_and_errors_in_one_line(
        cluster: ClusterInfo, tmp_path: Path) -> None:
    create(cluster, "dr-errors", 1)
    produce(cluster.bootstrap_servers, "dr-errors", [b"v%d" % i for i in range(5)], 1)
    mixed = delete_records(cluster, tmp_path, spec(("dr-errors", 0, 2), ("dr-errors", 7, 0),
                                                   ("absent", 0, 0)))
    assert mixed.returncode == 1
    assert mixed.stdout.splitlines() == [
        "Executing records delete operation",
        "Records delete operation completed:",
        "partition: absent-0\terror: UNKNOWN_TOPIC_OR_PARTITION: Topic 'absent' does not "
        "exist",
        "partition: dr-errors-0\tlow_watermark: 2",
        "partition: dr-errors-7\terror: UNKNOWN_TOPIC_OR_PARTITION: Partition dr-errors-7 "
        "does not exist",
    ]
    beyond = delete_records(cluster, tmp_path, spec(("dr-errors", 0, 99)))
    assert beyond.returncode == 1
    assert beyond.stdout.splitlines()[2].startswith(
        "partition: dr-errors-0\terror: OFFSET_OUT_OF_RANGE: ")

    for document, message in [
            ("{not json", "Error: The input string is not a valid JSON"),
            ({"partitions": [{"topic": "dr-errors", "partition": 0}], "version": 1},
             "Error: Offset json file: each partition needs an integer 'offset'"),
            ({"partitions": [], "version": 2}, "Error: Not supported version field value 2"),
            (spec(("dr-errors", 0, 1), ("dr-errors", 0, 2)),
             "Error: Offset json file contains duplicate topic partitions: dr-errors-0")]:
        bad = delete_records(cluster, tmp_path, document)
        assert ("Error: " + one_error_line(bad, "Error: ")).startswith(message), bad.stderr
        assert bad.stdout == ""
    missing = raftka("delete-records", "--bootstrap-server", cluster.bootstrap_servers,
                     "--offset-json-file", str(tmp_path / "absent.json"))
    assert "absent.json" in one_error_line(missing, "Error: ")
    nowhere = dead_server()
    unreachable = delete_records(cluster, tmp_path, spec(("dr-errors", 0, 1)), nowhere)
    assert f"no broker reachable at {nowhere}: " in one_error_line(unreachable, "Error: ")
