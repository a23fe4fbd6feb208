"""Spark test fixtures: one local[2] SparkSession and one single-node Raftka cluster per
module (started by the launcher, the code path of scripts/bootstrap-quorum)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from tests.compat.cluster import Cluster, running_cluster

REPO_ROOT = Path(__file__).resolve().parents[2]


def java_missing_reason() -> str | None:
    """Why Spark cannot start here (it needs Java 17 or newer), or None."""
    java = shutil.which("java", path=os.path.join(os.environ.get("JAVA_HOME", ""), "bin")
                        + os.pathsep + os.environ.get("PATH", ""))
    if java is None:
        return "Spark needs Java 17 or newer and no java is installed (apt-get install openjdk-17-jre-headless)"
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    first = out.splitlines()[0] if out else ""
    try:
        major = int(first.split('"')[1].split(".")[0])
    except (IndexError, ValueError):
        return f"cannot tell the Java version from {first!r}"
    if major < 17:
        return f"Spark needs Java 17 or newer, found {first}"
    return None


def require_java() -> None:
    reason = java_missing_reason()
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def worker_pythonpath() -> str:
    """An editable install serves packages through an import hook that PySpark's discovery
    of ``pyspark_*`` modules (pkgutil.iter_modules) cannot list; a wheel install puts
    pyspark_raftka.py in site-packages. Putting the checkout on the workers' path gives
    the tests what a wheel install gives users."""
    current = os.environ.get("PYTHONPATH")
    return str(REPO_ROOT) if not current else f"{REPO_ROOT}{os.pathsep}{current}"


@pytest.fixture(scope="module")
def spark() -> Iterator["object"]:
    require_java()
    from pyspark.sql import SparkSession

    os.environ["PYTHONPATH"] = worker_pythonpath()
    # Spark starts its Python workers with PYSPARK_PYTHON (else whatever python3 is on PATH).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (SparkSession.builder.master("local[2]").appName("raftka-spark-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One combined node, shared by the module's tests; each test uses its own topics."""
    with running_cluster(tmp_path_factory.mktemp("cluster"), nodes=1, overrides={
            "log.retention.check.interval.ms": "200",
            "offsets.topic.replication.factor": "1"}) as started:
        yield started
