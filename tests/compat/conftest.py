"""Compat-suite fixtures: one launcher cluster per test module."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.compat.cluster import Cluster, running_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Three combined nodes from bootstrap_quorum, shared by the module's tests."""
    with running_cluster(tmp_path_factory.mktemp("cluster")) as started:
        yield started
