"""`raftka storage` and `raftka server start` checks, through the CLI entry point."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.cli.main import main
from broker.config import load_properties, parse_uuid


def write_config(tmp_path: Path, node_id: int = 1, extra: str = "") -> Path:
    path = tmp_path / f"server-{node_id}.properties"
    path.write_text(
        "process.roles=broker,controller\n"
        f"node.id={node_id}\n"
        f"controller.quorum.voters={node_id}@127.0.0.1:29093\n"
        "listeners=PLAINTEXT://127.0.0.1:29092,CONTROLLER://127.0.0.1:29093\n"
        "controller.listener.names=CONTROLLER\n"
        f"log.dirs={tmp_path / 'a'},{tmp_path / 'b'}\n"
        f"metadata.log.dir={tmp_path / 'meta'}\n" + extra)
    return path


def new_uuid(capsys) -> str:
    capsys.readouterr()
    assert main(["storage", "random-uuid"]) == 0
    return capsys.readouterr().out.strip()


def test_random_uuid_is_22_chars_base64url(capsys) -> None:
    ids = {new_uuid(capsys) for _ in range(20)}
    assert len(ids) == 20
    for text in ids:
        assert len(text) == 22 and "=" not in text and not text.startswith("-")
        parse_uuid(text)


def test_format_writes_meta_properties_in_every_dir(tmp_path: Path, capsys) -> None:
    cluster_id = new_uuid(capsys)
    assert main(["storage", "format", "-t", cluster_id, "-c", str(write_config(tmp_path))]) == 0
    directory_ids = set()
    for name in ("a", "b", "meta"):
        meta = load_properties(tmp_path / name / "meta.properties")
        assert meta["cluster.id"] == cluster_id
        assert meta["node.id"] == "1"
        assert meta["version"] == "1"
        directory_ids.add(meta["directory.id"])
    assert len(directory_ids) == 3


def test_format_twice_needs_ignore_formatted(tmp_path: Path, capsys) -> None:
    cluster_id = new_uuid(capsys)
    config = str(write_config(tmp_path))
    assert main(["storage", "format", "-t", cluster_id, "-c", config]) == 0
    assert main(["storage", "format", "-t", cluster_id, "-c", config]) == 1
    assert "already formatted" in capsys.readouterr().err
    assert main(["storage", "format", "-t", cluster_id, "-c", config, "--ignore-formatted"]) == 0


def test_format_refuses_other_cluster_or_node(tmp_path: Path, capsys) -> None:
    first = new_uuid(capsys)
    assert main(["storage", "format", "-t", first, "-c", str(write_config(tmp_path))]) == 0
    other = new_uuid(capsys)
    assert main(["storage", "format", "-t", other, "-c", str(write_config(tmp_path)),
                 "--ignore-formatted"]) == 1
    assert "cluster.id" in capsys.readouterr().err
    assert main(["storage", "format", "-t", first, "-c", str(write_config(tmp_path, 2)),
                 "--ignore-formatted"]) == 1
    assert "node.id" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["short", "!!!!!!!!!!!!!!!!!!!!!!", ""])
def test_format_rejects_invalid_cluster_id(tmp_path: Path, capsys, bad: str) -> None:
    assert main(["storage", "format", "-t", bad, "-c", str(write_config(tmp_path))]) == 1
    assert "invalid cluster id" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()


def test_format_reports_config_errors_by_key(tmp_path: Path, capsys) -> None:
    config = write_config(tmp_path, extra="num.partitions=zero\n")
    assert main(["storage", "format", "-t", new_uuid(capsys), "-c", str(config)]) == 1
    assert "num.partitions" in capsys.readouterr().err


def test_server_start_refuses_unformatted_storage(tmp_path: Path, capsys) -> None:
    assert main(["server", "start", str(write_config(tmp_path))]) == 1
    err = capsys.readouterr().err
    assert "not formatted" in err and "raftka storage format" in err


def test_server_start_reports_bad_config_key(tmp_path: Path, capsys) -> None:
    config = write_config(tmp_path, extra="controller.quorum.voters=1@127.0.0.1\n")
    assert main(["server", "start", str(config)]) == 1
    assert "controller.quorum.voters" in capsys.readouterr().err


def test_server_start_refuses_cluster_id_mismatch(tmp_path: Path, capsys) -> None:
    formatted = new_uuid(capsys)
    config = write_config(tmp_path)
    assert main(["storage", "format", "-t", formatted, "-c", str(config)]) == 0
    other = new_uuid(capsys)
    assert main(["server", "start", str(config), "--override", f"cluster.id={other}"]) == 1
    assert "does not match" in capsys.readouterr().err


def test_info_prints_what_format_wrote(tmp_path: Path, capsys) -> None:
    cluster_id = new_uuid(capsys)
    config = str(write_config(tmp_path))
    assert main(["storage", "format", "-t", cluster_id, "-c", config]) == 0
    capsys.readouterr()
    assert main(["storage", "info", "-c", config]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:5] == ["Found log directories:", f"  {tmp_path / 'a'}", f"  {tmp_path / 'b'}",
                       f"  {tmp_path / 'meta'} (metadata)", ""]
    found = out[5:]
    assert len(found) == 3
    for line, name in zip(found, ("a", "b", "meta")):
        meta = load_properties(tmp_path / name / "meta.properties")
        assert line == (f"Found metadata in {tmp_path / name}: {{cluster.id={cluster_id}, "
                        f"directory.id={meta['directory.id']}, node.id=1, version=1}}")


def test_info_on_unformatted_storage_is_one_line(tmp_path: Path, capsys) -> None:
    config = str(write_config(tmp_path))
    assert main(["storage", "info", "-c", config]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith(f"raftka storage: log directory {tmp_path / 'a'} is not "
                                   "formatted; run `raftka storage format")
