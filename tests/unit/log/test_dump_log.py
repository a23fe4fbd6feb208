from pathlib import Path

import pytest

from broker.cli.main import main

from tests.unit.log.helpers import NOW, batch, open_log


def _make_log(tmp_path: Path) -> Path:
    log = open_log(tmp_path, {"index.interval.bytes": "100"})
    for n in range(10):
        log.append_as_leader(batch([b"value-%d" % n + b"." * 80], keys=[b"key-%d" % n],
                                   producer_id=5, producer_epoch=0, base_sequence=n), 2, NOW)
    log.close()
    return log.directory / "00000000000000000000.log"


def test_dump_prints_one_line_per_batch_and_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _make_log(tmp_path)
    assert main(["dump-log", "--files", str(path), "--print-data"]) == 0
    out = capsys.readouterr().out
    batch_lines = [line for line in out.splitlines() if line.startswith("baseOffset:")]
    assert len(batch_lines) == 10
    assert "baseOffset: 3 lastOffset: 3 count: 1 baseSequence: 3" in out
    assert "producerId: 5 producerEpoch: 0" in out and "isvalid: true" in out and "compresscodec: none" in out
    assert "| offset: 4 CreateTime: %d" % NOW in out and "key: key-4 payload: value-4" in out


def test_verify_checks_index_entries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _make_log(tmp_path)
    assert main(["dump-log", "--files", str(path), "--verify"]) == 0
    index = path.with_suffix(".index")
    raw = bytearray(index.read_bytes())
    assert raw
    raw[3] ^= 0x01  # corrupt the first entry's relative offset
    index.write_bytes(bytes(raw))
    capsys.readouterr()
    assert main(["dump-log", "--files", str(index)]) == 1
    assert "mismatch" in capsys.readouterr().out


def test_missing_file_fails_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump-log", "--files", str(tmp_path / "nope.log")]) == 1
    assert "does not exist" in capsys.readouterr().err
