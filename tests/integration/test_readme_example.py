"""The Python example of the Python API page (docs/python-api.md) runs as written against a
real cluster."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from tests.compat.cluster import running_cluster
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow


def readme_python_example() -> str:
    section = (REPO_ROOT / "docs" / "python-api.md").read_text()
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the Python API page has no python example"
    return match.group(1)


def test_readme_python_example_produces_and_consumes(tmp_path: Path) -> None:
    example = readme_python_example()
    assert "127.0.0.1:9092" in example
    with running_cluster(tmp_path, nodes=1) as cluster:
        code = example.replace("127.0.0.1:9092", cluster.bootstrap)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, "python-api.md", "exec"), {})
    lines = out.getvalue().splitlines()
    # The producer prints "partition offset"; the consumer prints the record it read back.
    partition, offset = lines[0].split()
    assert offset == "0"
    assert any(line.startswith(f"{partition} 0 b'k1' b'hello'") for line in lines[1:])
