"""Samples, while the console runs, every group's total lag into a LagHistory and the
cluster's traffic into a ThroughputHistory."""

from __future__ import annotations

import logging
import time
from typing import Mapping

import trio

from clients.manager.gather import ClusterReader
from clients.manager.history import LagHistory
from clients.manager.throughput import ThroughputHistory
from clients.manager.traffic import metrics_sample, offsets_sample
from clients.net import KafkaConnectionError
from clients.protocol import KafkaError, ProtocolError

logger = logging.getLogger(__name__)


async def sample_lag_forever(reader: ClusterReader, history: LagHistory,
                             interval_s: float) -> None:
    """Every ``interval_s``: each group's total lag (the groups page's numbers) into
    ``history``; a failed round is logged and skipped."""
    while True:
        try:
            rows = await reader.groups()
        except (KafkaError, KafkaConnectionError, ProtocolError, OSError) as exc:
            logger.warning("lag sample failed: %s", exc)
        except Exception:  # a bad round must not stop the console's pages
            logger.exception("lag sample failed")
        else:
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
    brokers' metrics endpoints when given, else from offsets; a failed round is skipped."""
    while True:
        try:
            if metrics_endpoints:
                sample = await metrics_sample(metrics_endpoints)
            else:
                sample = await offsets_sample(reader)
        except (KafkaError, KafkaConnectionError, ProtocolError, OSError) as exc:
            logger.warning("throughput sample failed: %s", exc)
        except Exception:  # a bad round must not stop the console's pages
            logger.exception("throughput sample failed")
        else:
            history.record(sample)
        await trio.sleep(interval_s)
