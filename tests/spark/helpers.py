"""Producing test data with confluent-kafka and reading a topic back for comparison."""

from __future__ import annotations

from typing import Any, Iterable

import confluent_kafka

from tests.compat.cluster import Cluster


def produce(cluster: Cluster, topic: str, records: Iterable[dict[str, Any]],
            **config: Any) -> list[dict[str, Any]]:
    """Produce ``records`` (dicts of value, key, partition, headers, timestamp) and return
    them with the partition, offset and timestamp the broker acknowledged."""
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap,
                                         "broker.address.family": "v4", "linger.ms": 5,
                                         **config})
    delivered: list[dict[str, Any]] = []
    failures: list[Any] = []

    def on_delivery(err: Any, msg: Any, record: dict[str, Any]) -> None:
        if err is not None:
            failures.append(err)
            return
        ts_type, ts = msg.timestamp()
        delivered.append({**record, "partition": msg.partition(), "offset": msg.offset(),
                          "timestamp_ms": ts, "timestampType": ts_type - 1})

    for record in records:
        kwargs = {k: v for k, v in record.items()
                  if k in ("key", "partition", "headers", "timestamp") and v is not None}
        producer.produce(topic, record.get("value"),
                         on_delivery=lambda err, msg, r=record: on_delivery(err, msg, r),
                         **kwargs)
    remaining = producer.flush(30)
    assert remaining == 0 and not failures, f"produce failed: {failures[:3]}, {remaining} left"
    return sorted(delivered, key=lambda r: (r["partition"], r["offset"]))


def spark_options(cluster: Cluster, **options: Any) -> dict[str, str]:
    return {"kafka.bootstrap.servers": cluster.bootstrap,
            **{k: str(v) for k, v in options.items()}}
