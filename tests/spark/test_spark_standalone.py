"""The quickstart's pipeline on a Spark standalone cluster: a master and two workers started
from pyspark's own classes, so executors are separate processes that unpickle the reader
and the writer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

from cluster.launcher.ports import pick_block
from cluster.testing.waiting import wait_for
from tests.compat.cluster import Cluster
from tests.spark.conftest import REPO_ROOT, require_java

pytestmark = pytest.mark.slow

SPARK_CLASS = Path(sys.executable).with_name("spark-class")


def _spark_env() -> dict[str, str]:
    # Everything on loopback: nothing listens beyond it.
    return {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``spark://`` URL of a master with two one-core workers, and the workers' work dir."""
    require_java()
    base = tmp_path_factory.mktemp("standalone")
    # The master's port and the three web UIs, free now in the test port range.
    port = pick_block(range(4))
    ui = port + 1
    env = _spark_env()
    processes: list[subprocess.Popen[bytes]] = []

    def start(*args: str, log: str) -> None:
        with open(base / log, "wb") as out:
            processes.append(subprocess.Popen([str(SPARK_CLASS), *args], env=env, stdout=out,
                                              stderr=subprocess.STDOUT, cwd=base))

    master = f"spark://127.0.0.1:{port}"
    try:
        start("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
              str(port), "--webui-port", str(ui), log="master.log")
        for i in (1, 2):
            start("org.apache.spark.deploy.worker.Worker", master, "--host", "127.0.0.1",
                  "--cores", "1", "--memory", "1g", "--webui-port", str(ui + i),
                  "--work-dir", str(base / "work"), log=f"worker-{i}.log")

        def alive_workers() -> int:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=5) as r:
                    return int(json.load(r).get("aliveworkers", 0)) >= 2
            except OSError:
                return False

        try:
            # Three JVMs starting at once on a busy two-core machine can take minutes.
            wait_for(alive_workers, "two workers registered with the master", 240,
                     interval=0.5)
        except TimeoutError as exc:
            logs = "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-1500:]}"
                             for log in sorted(base.glob("*.log")))
            raise TimeoutError(f"{exc}\n{logs}") from None
        yield master, base / "work"
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


def test_pipeline_runs_on_a_standalone_cluster(standalone: tuple[str, Path],
                                               cluster: Cluster, tmp_path: Path) -> None:
    master, work_dir = standalone
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "scripts" / "pageviews_pipeline.py"),
         "--bootstrap-servers", cluster.bootstrap, "--events", "2000", "--master", master,
         "--work-dir", str(tmp_path)], cwd=tmp_path,
        env={**_spark_env(), "SPARK_EXECUTOR_MEMORY": "512m"}, capture_output=True, text=True,
        timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "2000 views in all" in result.stdout
    # One executor per worker, each a process of its own with its own log.
    executors = [p for p in work_dir.glob("app-*/*") if (p / "stderr").exists()]
    assert len(executors) == 2, executors
