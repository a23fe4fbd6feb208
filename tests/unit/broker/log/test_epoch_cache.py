from pathlib import Path

from broker.log.epoch_cache import LeaderEpochCache


def test_end_offset_for_follows_kafka(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path)
    assert cache.end_offset_for(0, 10) == (-1, -1)
    cache.assign(2, 0)
    cache.assign(4, 10)
    cache.assign(6, 20)
    leo = 30
    assert cache.end_offset_for(6, leo) == (6, 30)  # latest epoch: the LEO
    assert cache.end_offset_for(4, leo) == (4, 20)
    assert cache.end_offset_for(5, leo) == (4, 20)  # unknown epoch: the largest below it
    assert cache.end_offset_for(1, leo) == (1, 0)  # older than everything: first start offset
    assert cache.end_offset_for(7, leo) == (-1, -1)  # newer than everything
    assert cache.end_offset_for(-1, leo) == (-1, -1)


def test_assign_replaces_conflicting_entries_and_persists(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path)
    cache.assign(1, 0)
    cache.assign(2, 5)
    assert not cache.assign(2, 7)
    cache.assign(3, 4)  # start below epoch 2's start: epoch 2 goes
    assert cache.entries == [(1, 0), (3, 4)]
    text = (tmp_path / "leader-epoch-checkpoint").read_text()
    assert text == "0\n2\n1 0\n3 4\n"
    assert LeaderEpochCache(tmp_path).entries == [(1, 0), (3, 4)]


def test_truncation_from_both_ends(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path)
    for epoch, start in [(1, 0), (2, 10), (3, 20)]:
        cache.assign(epoch, start)
    cache.truncate_from_end(15)
    assert cache.entries == [(1, 0), (2, 10)]
    cache.truncate_from_start(12)
    assert cache.entries == [(2, 12)]
    assert cache.epoch_for_offset(13) == 2


def test_the_log_keeps_leader_epoch_checkpoint_in_kafkas_format(tmp_path: Path) -> None:
    from tests.unit.broker.log.helpers import NOW, batch, open_log

    log = open_log(tmp_path)
    for epoch in (0, 0, 3, 5):
        log.append_as_leader(batch([b"a", b"b"]), epoch, NOW)
    checkpoint = log.directory / "leader-epoch-checkpoint"
    # Kafka's LeaderEpochCheckpointFile: version, entry count, then "epoch startOffset" lines.
    assert checkpoint.read_text() == "0\n3\n0 0\n3 4\n5 6\n"
    assert log.epoch_cache.end_offset_for(3, log.log_end_offset) == (3, 6)
    log.truncate_to(6)  # a batch boundary: epoch 5 goes from the log and the file
    assert checkpoint.read_text() == "0\n2\n0 0\n3 4\n"
    log.close()
