from pathlib import Path

import pytest

from broker.cli.main import main
from clients.records.header import iter_batches

from tests.unit.broker.log.helpers import NOW, batch, open_log


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


def test_verify_of_a_log_file_reports_a_corrupt_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _make_log(tmp_path)
    index = path.with_suffix(".index")
    raw = bytearray(index.read_bytes())
    raw[7] ^= 0x01  # the first entry's position no longer starts a batch
    index.write_bytes(bytes(raw))
    assert main(["dump-log", "--files", str(path)]) == 0  # without --verify indexes are not read
    capsys.readouterr()
    assert main(["dump-log", "--files", str(path), "--verify"]) == 1
    out = capsys.readouterr().out
    assert "Index offset mismatch" in out and "1 mismatch(es) in 00000000000000000000.index" in out


def test_several_files_and_every_batch_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = open_log(tmp_path, {"segment.bytes": "300", "message.timestamp.type": "LogAppendTime"})
    for n in range(6):
        log.append_as_leader(batch([b"x" * 60, b"y"], producer_id=8, producer_epoch=3, base_sequence=2 * n), 4, NOW + 9)
    log.close()
    files = sorted(log.directory.glob("*.log"))
    assert len(files) >= 2
    assert main(["dump-log", "--files", ",".join(str(f) for f in files), "--verify"]) == 0
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("Dumping ")] == [f"Dumping {f}" for f in files]
    lines = [line for line in out.splitlines() if line.startswith("baseOffset:")]
    assert len(lines) == 6
    fields = dict(zip(lines[1].split()[0::2], lines[1].split()[1::2]))
    assert fields == {
        "baseOffset:": "2", "lastOffset:": "3", "count:": "2", "baseSequence:": "2", "lastSequence:": "3",
        "producerId:": "8", "producerEpoch:": "3", "partitionLeaderEpoch:": "4", "isTransactional:": "false",
        "isControl:": "false", "position:": fields["position:"], "LogAppendTime:": str(NOW + 9),
        "size:": fields["size:"], "magic:": "2", "compresscodec:": "none", "crc:": fields["crc:"],
        "isvalid:": "true",
    }
    # The second batch as the file holds it: dump-log must report its real place, size and CRC.
    position, header = next((pos, h) for f in files for pos, h in iter_batches(f.read_bytes())
                            if h.base_offset == 2)
    assert (int(fields["position:"]), int(fields["size:"]), int(fields["crc:"])) == (
        position, header.size, header.crc)


def test_a_flipped_byte_shows_as_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _make_log(tmp_path)
    data = bytearray(path.read_bytes())
    data[100] ^= 0x01
    path.write_bytes(bytes(data))
    assert main(["dump-log", "--files", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.count("isvalid: false") == 1 and out.count("isvalid: true") == 9


def test_dump_prints_aborted_transactions_of_a_txnindex(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from clients.records.batch import Record, encode_batch

    log = open_log(tmp_path)
    data = encode_batch([Record(None, NOW, None, b"t")], producer_id=8, producer_epoch=0, base_sequence=0,
                        is_transactional=True)
    log.append_as_leader(bytearray(data), 0, NOW)
    log.append_marker(False, 8, 0, 3, 0, NOW)
    log.close()
    index = log.directory / "00000000000000000000.txnindex"
    assert main(["dump-log", "--files", str(index)]) == 0
    assert "version: 0 producerId: 8 firstOffset: 0 lastOffset: 1 lastStableOffset: 2" in capsys.readouterr().out
    index.write_bytes(index.read_bytes() + b"\x00\x01")
    assert main(["dump-log", "--files", str(index)]) == 1
    assert "invalid bytes" in capsys.readouterr().out
