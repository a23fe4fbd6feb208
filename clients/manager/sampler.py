"""Samples, while the console runs, every group's total lag into a LagHistory and the
cluster's traffic into a ThroughputHistory."""

from __future__ import annotations

import logging
import time
from typing import Mapping

import trio

from clients.manager.gather import ClusterReader
from clients.manager.history import LagHistory
from clients.manager.reach import detail
from clients.manager.throughput import ThroughputHistory
from clients.manager.traffic import SCRAPE_TIMEOUT_S, metrics_sample, offsets_sample
from clients.net import KafkaConnectionError
from clients.protocol import KafkaError, ProtocolError

logger = logging.getLogger(__name__)


async def sample_lag_forever(reader: ClusterReader, history: LagHistory,
                             interval_s: float) -> None:
    """Every ``interval_s``: each group's total lag (the groups page's numbers) into
    ``history``; a failed round is logged and skipped."""
    while True:
        reads = reader.page_reads()
        try:
            rows = await reader.groups(reads)
        except (KafkaError, KafkaConnectionError, ProtocolError, OSError) as exc:
            logger.warning("lag sample failed: %s", exc)
            rows = None
        except Exception:  # a bad round must not stop the console's pages
            logger.exception("lag sample failed")
            rows = None
        for problem in reads.problems:
            logger.warning("lag sample: %s", problem)
        if rows is not None:
            now = time.time()
            for row in rows:
                if row.lag is not None:
                    history.record(row.listing.group_id, now, row.lag)
            history.forget_except({row.listing.group_id for row in rows})
        await trio.sleep(interval_s)


async def sample_throughput_forever(reader: ClusterReader, history: ThroughputHistory,
                                    metrics_endpoints: Mapping[int, str],
                                    interval_s: float) -> None:
    """Every ``interval_s``: the cluster's traffic counters into ``history``, from the
    brokers' metrics endpoints when given, else from offsets; a failed round is skipped.
    What could not be sampled is kept in ``history.problems`` for the page's banner."""
    while True:
        try:
            if metrics_endpoints:
                sample, history.problems = await metrics_sample(
                    metrics_endpoints, min(SCRAPE_TIMEOUT_S, reader.page_timeout_s))
            else:
                with trio.fail_after(reader.page_timeout_s):
                    sample = await offsets_sample(reader)
                history.problems = []
        except (KafkaError, KafkaConnectionError, ProtocolError, OSError) as exc:
            logger.warning("throughput sample failed: %s", exc)
            history.problems = [f"traffic not sampled from offsets: {detail(exc)}"]
        except trio.TooSlowError:
            logger.warning("throughput sample failed: no answer in time")
            history.problems = [f"traffic not sampled from offsets: no answer from the "
                                f"cluster at {reader.bootstrap} within "
                                f"{reader.page_timeout_s:g} s"]
        except Exception:  # a bad round must not stop the console's pages
            logger.exception("throughput sample failed")
        else:
            history.record(sample)
        await trio.sleep(interval_s)
