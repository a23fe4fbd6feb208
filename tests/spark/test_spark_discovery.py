"""PySpark finds the ``raftka`` data source by itself, with no register call, from a
directory other than the checkout and with the checkout not on PYTHONPATH: in the project's
own environment (an editable install) and in a fresh environment holding the built wheel."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from tests.spark.conftest import REPO_ROOT, require_java

# What PySpark's discovery worker runs (pyspark.sql.worker.lookup_data_sources), with its
# answer to the JVM (a count, then each name and its pickled class) read back.
LOOKUP = r"""
import io, json
from pyspark.serializers import read_int
from pyspark.sql.worker.lookup_data_sources import _main
answer = io.BytesIO()
_main(io.BytesIO(), answer)
answer.seek(0)
names = []
for _ in range(read_int(answer)):
    names.append(answer.read(read_int(answer)).decode())
    answer.read(read_int(answer))
import pyspark_raftka
print(json.dumps({"names": names, "module": pyspark_raftka.__file__}))
"""

# A whole Spark application: the JVM asks its Python worker for the data sources.
SPARK_READ = r"""
import json
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").appName("raftka-discovery")
         .config("spark.ui.enabled", "false").getOrCreate())
try:
    print(json.dumps(spark.read.format("raftka").load().columns))
finally:
    spark.stop()
"""


def outside_env(python: str) -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH, Spark's workers on ``python``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    env["PYSPARK_PYTHON"] = python
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return env


def run_outside(python: str, code: str, cwd: Path, timeout: float) -> Any:
    result = subprocess.run([python, "-c", code], cwd=cwd, env=outside_env(python),
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_pyspark_lookup_finds_raftka_outside_the_checkout(tmp_path: Path) -> None:
    found = run_outside(sys.executable, LOOKUP, tmp_path, 120)
    assert found["names"] == ["raftka"]


@pytest.mark.slow
def test_spark_reads_format_raftka_from_another_directory(tmp_path: Path) -> None:
    require_java()
    columns = run_outside(sys.executable, SPARK_READ, tmp_path, 300)
    assert columns == ["key", "value", "topic", "partition", "offset", "timestamp",
                       "timestampType"]


@pytest.mark.slow
def test_a_wheel_install_is_found(tmp_path: Path) -> None:
    """The wheel, built offline from the tracked files, installed alone into a fresh
    environment; its dependencies come from this one (a path entry, whose own .pth files,
    this checkout's editable install among them, are not processed)."""
    source = tmp_path / "source"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (REPO_ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, source / name)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(wheels), str(source)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = wheels.glob("raftka-*.whl")

    fresh = tmp_path / "fresh"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv",
                    "--without-pip", str(fresh)], check=True, timeout=120)
    python = str(fresh / "bin" / "python")
    site = Path(subprocess.run([python, "-c", "import sysconfig; "
                                "print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(site), str(wheel)], check=True, capture_output=True, timeout=300)
    (site / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")

    found = run_outside(python, LOOKUP, tmp_path, 120)
    assert found["names"] == ["raftka"]
    assert Path(found["module"]).parent == site
