"""Fixtures for the quorum tests."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.unit.kraft.support import Cluster


@pytest.fixture
def cluster_factory(tmp_path: Path) -> Iterator:
    """Build clusters that are closed when the test ends."""
    clusters: list[Cluster] = []

    def make(size: int = 3, **overrides: object) -> Cluster:
        cluster = Cluster(tmp_path / f"cluster-{len(clusters)}", size, **overrides)
        clusters.append(cluster)
        return cluster

    yield make
    for cluster in clusters:
        cluster.close()
    for cluster in clusters:
        assert not cluster.violations(), "state machine contract breached"
