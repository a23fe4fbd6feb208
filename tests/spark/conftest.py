"""Spark test fixtures: one local[2] SparkSession and one single-node Raftka cluster per
module (started by the launcher, the code path of scripts/bootstrap-quorum)."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
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


@contextmanager
def spark_session(master: str = "local[2]") -> Iterator["object"]:
    """A SparkSession for one module's tests, stopped at the end with the environment
    restored. ``local[N,F]`` lets each task fail F times before the job fails (plain
    ``local[N]`` never retries a task)."""
    require_java()
    from pyspark.sql import SparkSession

    saved = {"PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON")}
    # Spark starts its Python workers with PYSPARK_PYTHON (else whatever python3 is on PATH).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (SparkSession.builder.master(master).appName("raftka-spark-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    # py4j logs at INFO from a finalizer at interpreter exit, after pytest closed its log
    # capture: that only prints "--- Logging error ---" noise.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    try:
        yield session
    finally:
        session.stop()
        for name, value in saved.items():  # later modules' processes get the old environment
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="module")
def spark() -> Iterator["object"]:
    with spark_session() as session:
        yield session


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One combined node, shared by the module's tests; each test uses its own topics."""
    with running_cluster(tmp_path_factory.mktemp("cluster"), nodes=1, overrides={
            "log.retention.check.interval.ms": "200",
            "offsets.topic.replication.factor": "1"}) as started:
        yield started
