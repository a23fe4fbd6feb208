"""What the console's pages compute from admin answers."""

from __future__ import annotations

from clients.admin import BrokerNode, PartitionInfo
from clients.manager import views


def _p(partition: int, leader: int, replicas: tuple[int, ...], isr: tuple[int, ...]
       ) -> PartitionInfo:
    return PartitionInfo("t", partition, leader, 0, replicas, isr)


def test_partition_health_flags() -> None:
    healthy = views.partition_row(_p(0, 1, (1, 2, 3), (1, 2, 3)), [1, 2, 3])
    short = views.partition_row(_p(1, 1, (1, 2, 3), (1, 3)), [1, 3])
    leaderless = views.partition_row(_p(2, -1, (2,), ()), [1, 3])
    dead_leader = views.partition_row(_p(3, 2, (2,), (2,)), [1, 3])
    assert (healthy.under_replicated, healthy.offline) == (False, False)
    assert (short.under_replicated, short.offline) == (True, False)
    assert (leaderless.under_replicated, leaderless.offline) == (True, True)
    assert (dead_leader.under_replicated, dead_leader.offline) == (False, True)


def test_broker_rows_count_leaders_and_replicas_and_show_missing_brokers() -> None:
    brokers = [BrokerNode(1, "h1", 9092, "r1"), BrokerNode(3, "h3", 9092)]
    partitions = [_p(0, 1, (1, 2, 3), (1, 3)), _p(1, 3, (3, 2), (3,)), _p(2, 1, (1,), (1,))]
    rows = views.broker_rows(brokers, 3, partitions)
    assert [(r.node_id, r.fenced, r.leaders, r.partitions, r.controller) for r in rows] == [
        (1, False, 2, 2, False), (2, True, 0, 2, False), (3, False, 1, 2, True)]
    assert rows[0].rack == "r1"


def test_topic_row_sums_its_partitions() -> None:
    rows = [views.partition_row(_p(0, 1, (1, 2), (1,)), [1, 2]),
            views.partition_row(_p(1, 2, (2, 1), (2, 1)), [1, 2])]
    row = views.topic_row("t", False, rows)
    assert (row.partitions, row.replication_factor, row.under_replicated, row.offline) == (
        2, 2, 1, 0)


def test_lag_is_log_end_minus_committed_never_negative() -> None:
    rows = views.lag_rows({("a", 0): 5, ("a", 1): 9, ("b", 0): 3},
                          {("a", 0): 8, ("a", 1): 7, ("c", 0): 4},
                          {("a", 0): "m1", ("c", 0): "m2"})
    assert [(r.topic, r.partition, r.committed, r.log_end, r.lag, r.owner) for r in rows] == [
        ("a", 0, 5, 8, 3, "m1"), ("a", 1, 9, 7, 0, "-"), ("b", 0, 3, None, None, "-"),
        ("c", 0, None, 4, None, "m2")]
    assert views.total_lag(rows) == 3
    assert views.total_lag(rows[2:]) is None


def test_record_bytes_as_text_or_hex() -> None:
    assert views.show_bytes(None, "auto") is None
    assert views.show_bytes(b"<k>", "auto") == "<k>"
    assert views.show_bytes(b"\x00\xff", "auto") == "00 ff"
    assert views.show_bytes(b"\x01ab", "auto") == "01 61 62"
    assert views.show_bytes(b"ab", "hex") == "61 62"
    assert views.show_bytes(b"a\xffb", "text") == "a\ufffdb"
    assert views.show_bytes("é".encode(), "auto") == "é"


def test_message_window_defaults_to_the_last_records() -> None:
    assert views.message_window(0, 100, 20, None) == (80, 100)
    assert views.message_window(95, 100, 20, None) == (95, 100)
    assert views.message_window(10, 100, 20, 3) == (10, 30)
    assert views.message_window(10, 100, 20, 90) == (90, 100)
    assert views.message_window(10, 100, 20, 500) == (100, 100)
    assert views.message_window(0, 0, 20, None) == (0, 0)


def test_record_times_in_utc() -> None:
    assert views.show_time(0) == "1970-01-01T00:00:00.000+00:00"
    assert views.show_time(1_700_000_000_123) == "2023-11-14T22:13:20.123+00:00"
    assert views.show_time(-1) == "-"


def test_lag_history_is_bounded_and_forgets_deleted_groups() -> None:
    from clients.manager.history import LagHistory

    history = LagHistory(max_points=3)
    for t in range(5):
        history.record("g", float(t), t * 10)
    history.record("gone", 0.0, 1)
    assert history.series("g") == [(2.0, 20), (3.0, 30), (4.0, 40)]
    history.forget_except({"g"})
    assert history.series("gone") == []


def test_lag_chart_is_svg_ending_at_the_last_sample() -> None:
    from clients.manager.charts import line_chart

    svg = str(line_chart("lag", [(0.0, 5), (10.0, 0), (20.0, 7)]))
    assert svg.startswith('<svg id="lag" data-points="3" data-last="7"')
    assert 'points="40.0,68.6 320.0,140.0 600.0,40.0"' in svg
    assert "no samples" in str(line_chart("lag", []))
    assert "&lt;" in str(line_chart("<x>", []))


def test_sizes_for_people() -> None:
    from clients.manager.views import show_size

    assert [show_size(n) for n in (None, 0, 1023, 1536, 20 * 1024 * 1024)] == [
        "?", "0 B", "1023 B", "1.5 KiB", "20.0 MiB"]
