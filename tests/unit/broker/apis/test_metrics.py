"""The broker's Prometheus metrics, scraped over HTTP from a broker serving real sockets and
parsed with prometheus-client's parser: the values move with produce, fetch, ISR changes,
purgatory waits and group commits."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator
from urllib.error import HTTPError

import pytest
import trio
from prometheus_client import CollectorRegistry
from prometheus_client.samples import Sample

from broker.config.metrics_listener import MetricsListener
from broker.metrics.endpoint import MetricsEndpoint
from cluster.testing.metrics import metrics_url, scrape, value
from clients.protocol import ApiKey
from metadata.records import PartitionChangeRecord
from tests.unit.broker.apis.batches import batch, fetch_body, only_partition, produce_body
from tests.unit.broker.apis.harness import BROKER_ID, Broker, running_broker


@asynccontextmanager
async def serving_metrics(broker: Broker) -> AsyncIterator[str]:
    """The broker's collector served on a free loopback port; yields the /metrics URL."""
    registry = CollectorRegistry()
    registry.register(broker.server.collector)
    endpoint = MetricsEndpoint(MetricsListener("127.0.0.1", 0), registry)
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(endpoint.serve)
        yield metrics_url(host, port)
        nursery.cancel_scope.cancel()


async def scraped(url: str) -> list[Sample]:
    return await trio.to_thread.run_sync(scrape, url)


async def test_produce_and_fetch_move_the_topic_and_request_metrics(tmp_path):
    async with running_broker(tmp_path) as broker, serving_metrics(broker) as url:
        broker.create_topic("t")
        before = await scraped(url)
        assert value(before, "kafka_server_brokertopicmetrics_bytesin_total",
                     {"topic": "t"}) in (None, 0)
        conn = await broker.connect()
        data = batch([b"a", b"b", b"c"])
        response = await conn.request(ApiKey.PRODUCE, produce_body("t", data))
        assert only_partition(response)["error_code"] == 0
        fetched = only_partition(await conn.request(ApiKey.FETCH, fetch_body("t")),
                                 "responses", "partitions")
        after = await scraped(url)
        assert value(after, "kafka_server_brokertopicmetrics_bytesin_total",
                     {"topic": "t"}) == len(data)
        assert value(after, "kafka_server_brokertopicmetrics_messagesin_total",
                     {"topic": "t"}) == 3
        assert value(after, "kafka_server_brokertopicmetrics_bytesout_total",
                     {"topic": "t"}) == len(bytes(fetched["records"])) > 0
        assert value(after, "kafka_network_requestmetrics_requests_total",
                     {"request": "Produce"}) == 1
        assert value(after, "kafka_network_requestmetrics_errors_total",
                     {"request": "Produce", "error": "NONE"}) == 1
        assert value(after, "kafka_network_requestmetrics_totaltimems_count",
                     {"request": "Fetch"}) == 1
        assert value(after, "kafka_network_requestmetrics_totaltimems_count",
                     {"request": "FetchConsumer"}) == 1
        assert value(after, "kafka_network_requestmetrics_totaltimems_bucket",
                     {"request": "Fetch", "le": "+Inf"}) == 1
        assert value(after, "kafka_server_socket_server_metrics_connection_count",
                     {"listener": "PLAINTEXT"}) == 1
        log = broker.log("t")
        assert value(after, "kafka_log_log_size", {"topic": "t", "partition": "0"}) \
            == log.size_in_bytes > 0
        assert value(after, "kafka_log_log_logendoffset", {"topic": "t", "partition": "0"}) == 3
        # A produce to a partition that does not exist counts its error code.
        await conn.request(ApiKey.PRODUCE, produce_body("missing", data))
        errors = await scraped(url)
        assert value(errors, "kafka_network_requestmetrics_errors_total",
                     {"request": "Produce", "error": "UNKNOWN_TOPIC_OR_PARTITION"}) == 1
        await conn.aclose()
        broker.delete_topic("t")
        gone = await scraped(url)
        assert value(gone, "kafka_server_brokertopicmetrics_bytesin_total",
                     {"topic": "t"}) is None


async def test_a_short_isr_and_a_waiting_fetch_show_in_the_replica_metrics(tmp_path):
    async with running_broker(tmp_path) as broker, serving_metrics(broker) as url:
        topic_id = broker.create_topic("t", replicas=(BROKER_ID, 2),
                                       configs={"min.insync.replicas": "2"})
        samples = await scraped(url)
        assert value(samples, "kafka_server_replicamanager_leadercount") == 1
        assert value(samples, "kafka_server_replicamanager_partitioncount") == 1
        assert value(samples, "kafka_server_replicamanager_underreplicatedpartitions") == 0
        broker.publish([PartitionChangeRecord(partition_id=0, topic_id=topic_id,
                                              isr=(BROKER_ID,))])
        samples = await scraped(url)
        assert value(samples, "kafka_server_replicamanager_underreplicatedpartitions") == 1
        assert value(samples, "kafka_server_replicamanager_underminisrpartitioncount") == 1
        # A long-poll fetch waits in the purgatory while the scrape runs.
        conn = await broker.connect()
        async with trio.open_nursery() as nursery:
            body = fetch_body("t")
            body.update(max_wait_ms=10_000, min_bytes=1)
            nursery.start_soon(conn.request, ApiKey.FETCH, body)
            with trio.fail_after(5):
                while broker.server.replica_manager.purgatory.waiting.get("Fetch", 0) < 1:
                    await trio.sleep(0.01)
            waiting = await scraped(url)
            assert value(waiting, "kafka_server_delayedoperationpurgatory_purgatorysize",
                         {"delayedOperation": "Fetch"}) == 1
            producer = await broker.connect()
            response = await producer.request(ApiKey.PRODUCE,
                                              produce_body("t", batch([b"wake"]), acks=1))
            assert only_partition(response)["error_code"] == 0
            await producer.aclose()  # the append answers the waiting fetch
        await conn.aclose()
        after = await scraped(url)
        assert value(after, "kafka_server_delayedoperationpurgatory_purgatorysize",
                     {"delayedOperation": "Fetch"}) == 0


async def test_the_endpoint_serves_only_get_metrics(tmp_path):
    async with running_broker(tmp_path) as broker, serving_metrics(broker) as url:
        with pytest.raises(HTTPError) as missing:
            await trio.to_thread.run_sync(scrape, url.replace("/metrics", "/other"))
        assert missing.value.code == 404


async def test_log_flushes_are_timed(tmp_path):
    async with running_broker(tmp_path) as broker, serving_metrics(broker) as url:
        broker.create_topic("durable", configs={"flush.messages": "1"})
        before = value(await scraped(url), "kafka_log_logflushstats_logflushrateandtimems_count")
        conn = await broker.connect()
        for _ in range(3):
            response = await conn.request(ApiKey.PRODUCE, produce_body("durable", batch([b"x"])))
            assert only_partition(response)["error_code"] == 0
        await conn.aclose()
        after = await scraped(url)
        # flush.messages=1: every append is fsynced, and each flush is timed.
        assert value(after, "kafka_log_logflushstats_logflushrateandtimems_count") \
            == (before or 0) + 3
        assert value(after, "kafka_log_logflushstats_logflushrateandtimems_sum") > 0
