"""Metadata snapshots: a whole cluster restarted from its snapshots serves the same image."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Callable

import pytest

from kraft.errors import SnapshotFormatError
from kraft.metadata_state_machine import load_snapshot
from kraft.snapshot import read_snapshot_file
from metadata.image import MetadataImage
from tests.integration.quorum_helpers import (
    QuorumCluster,
    alter_topic_config,
    create_topics,
    partition_views,
    start_cluster,  # noqa: F401  (fixture)
    topic_ids,
    wait_for,
)

pytestmark = pytest.mark.slow

SNAPSHOT_FILE_NAME = "raft.snapshot"  # kraft.quorum's name, under <metadata dir>/__cluster_metadata-0
# Small enough that a dozen topics cross it several times.
SNAPSHOT_EVERY_BYTES = "1024"
TOPICS = {f"snap-{i:02d}": (1 + i % 4, 1 + i % 3) for i in range(12)}
ALTERED_CONFIGS = {"snap-00": {"retention.ms": "3600000"},
                   "snap-01": {"cleanup.policy": "compact"},
                   "snap-02": {"segment.bytes": "1048576", "retention.ms": "7200000"}}


def read_snapshot(path: Path) -> tuple[int, MetadataImage] | None:
    """(offset, image) of a node's snapshot file; None while there is none."""
    try:
        snapshot = read_snapshot_file(path)
    except (FileNotFoundError, SnapshotFormatError):
        return None
    image, _ = load_snapshot(snapshot.state, snapshot.offset)
    return snapshot.offset, image


def holds_configs(image: MetadataImage) -> bool:
    return all(dict(image.topic_config(topic)) == configs
               for topic, configs in ALTERED_CONFIGS.items())


def image_summary(response: dict[str, Any]) -> dict[str, Any]:
    """What must survive a restart: topic ids, partition counts and replica lists (leaders
    and ISRs may legitimately change)."""
    ids = topic_ids(response)
    replicas = {key: view.replicas for key, view in partition_views(response).items()}
    return {"ids": {n: ids[n] for n in TOPICS if n in ids},
            "replicas": {k: v for k, v in replicas.items() if k[0] in TOPICS}}


def complete_summary(cluster: QuorumCluster, node_id: int) -> Callable[[], Any]:
    """Probe: the node's summary once it lists every topic with a leader everywhere."""
    expected = {(n, p) for n, (parts, _) in TOPICS.items() for p in range(parts)}

    def probe() -> dict[str, Any] | None:
        response = cluster.metadata_from(node_id)
        if response is None:
            return None
        views = partition_views(response)
        if not expected <= views.keys() or any(views[k].leader < 0 for k in expected):
            return None
        return image_summary(response)
    return probe


def test_cluster_restarted_from_snapshots_serves_the_same_metadata_on_every_node(
        start_cluster: Callable[..., QuorumCluster]) -> None:
    cluster = start_cluster(nodes=3, overrides={
        "metadata.log.max.record.bytes.between.snapshots": SNAPSHOT_EVERY_BYTES})
    port = cluster.client_port(cluster.broker_ids[0])
    names = list(TOPICS)
    create_topics(port, {n: TOPICS[n] for n in names[:4]})
    for topic, configs in ALTERED_CONFIGS.items():
        for key, value in configs.items():
            assert alter_topic_config(port, topic, key, value) == 0, (topic, key, value)
    # Later records push the config changes into a snapshot.
    for start in range(4, len(names), 4):
        create_topics(port, {n: TOPICS[n] for n in names[start:start + 4]})

    snapshots = {n: cluster.metadata_dir(n) / SNAPSHOT_FILE_NAME for n in cluster.controller_ids}
    first_offsets = {}
    for node_id, path in snapshots.items():
        offset, _ = wait_for(
            lambda: (s := read_snapshot(path)) is not None and holds_configs(s[1]) and s, 20,
            f"a snapshot holding the altered configs at {path}", details=cluster.logs)
        first_offsets[node_id] = offset

    before = wait_for(complete_summary(cluster, cluster.broker_ids[0]), 15,
                      "every topic with a leader", details=cluster.logs)
    for node_id in cluster.broker_ids[1:]:
        wait_for(lambda: complete_summary(cluster, node_id)() == before, 15,
                 f"node {node_id} to agree with node {cluster.broker_ids[0]}",
                 details=cluster.logs)

    log_sizes = {n: len(cluster.log_text(n)) for n in cluster.controller_ids}
    assert sorted(cluster.terminate(timeout=20)) == sorted(n.node_id for n in cluster.nodes)
    cluster.start_nodes([n.node_id for n in cluster.nodes])

    for node_id in cluster.controller_ids:
        since_restart = cluster.log_text(node_id)[log_sizes[node_id]:]
        assert "restored snapshot" in since_restart, (
            f"node {node_id} did not load its snapshot on restart:\n{since_restart[-3000:]}")
    for node_id in cluster.broker_ids:
        after = wait_for(complete_summary(cluster, node_id), 20,
                         f"node {node_id} to list every topic after the restart",
                         details=cluster.logs)
        assert after == before, f"node {node_id} serves a different image after restart"

    # Configs are not visible through Metadata: make every voter write a new snapshot of
    # its restarted image and check the configs (and topic ids) are still in it.
    def newer_snapshots_everywhere() -> dict[int, MetadataImage] | None:
        found = {n: read_snapshot(path) for n, path in snapshots.items()}
        if all(s is not None and s[0] > first_offsets[n] for n, s in found.items()):
            return {n: s[1] for n, s in found.items() if s is not None}
        create_topics(port, {f"after-restart-{uuid.uuid4().hex[:8]}": (4, 1)})
        return None

    images = wait_for(newer_snapshots_everywhere, 30, "new snapshots after the restart",
                      details=cluster.logs)
    for node_id, image in images.items():
        assert holds_configs(image), f"node {node_id} lost topic configs across the restart"
        ids = {name: image.topic(name).topic_id for name in TOPICS if image.topic(name)}
        assert ids == before["ids"], f"node {node_id}'s snapshot has other topic ids"
