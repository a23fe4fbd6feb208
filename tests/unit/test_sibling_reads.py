"""The run-time guard of tests/conftest.py: reads beside the checkout fail the run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.sibling_reads import SiblingReads, default_allowed, pytest_temp_root


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """A checkout ``repo`` and, beside it, ``neighbour``, ``venv`` and ``.cache``."""
    for name in ("repo/tests", "neighbour/data", "venv/lib", ".cache/tool"):
        (tmp_path / name).mkdir(parents=True)
    for name in ("repo/tests/data.txt", "neighbour/data/A.json", "venv/lib/x.py",
                 ".cache/tool/x"):
        (tmp_path / name).write_text("x")
    return tmp_path


def reads_of(recorder: SiblingReads, *events: tuple[str, tuple[object, ...]]) -> list[str]:
    for event, args in events:
        recorder.audit(event, args)
    return [read.path for read in recorder.reads]


def test_reads_beside_the_checkout_are_recorded(layout: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = SiblingReads(layout / "repo", allowed=[layout / "venv" / "lib"])
    monkeypatch.chdir(layout / "repo" / "tests")
    beside = str(layout / "neighbour" / "data" / "A.json")
    assert reads_of(
        recorder,
        ("open", (beside, "r", os.O_RDONLY)),
        ("open", (os.path.join("..", "..", "neighbour", "data", "A.json"), "r", os.O_RDONLY)),
        ("open", (os.fsencode(layout / "repo" / ".." / "neighbour" / "B.json"), None, os.O_RDONLY)),
        ("os.listdir", (layout / "neighbour",)),
        ("os.scandir", (str(layout),)),
        ("open", (str(layout / "elsewhere" / "C.json"), "r", os.O_RDONLY)),  # as in a fresh clone
    ) == [beside, beside, str(layout / "neighbour" / "B.json"), str(layout / "neighbour"),
          str(layout), str(layout / "elsewhere" / "C.json")]


def test_legitimate_paths_are_not_recorded(layout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = SiblingReads(layout / "repo", allowed=[layout / "venv" / "lib"])
    monkeypatch.chdir(layout / "repo")
    (layout / "made-by-the-run").mkdir()
    assert reads_of(
        recorder,
        ("open", (str(layout / "repo" / "tests" / "data.txt"), "r", os.O_RDONLY)),
        ("open", ("tests/data.txt", "r", os.O_RDONLY)),
        ("open", (str(layout / "venv" / "lib" / "x.py"), "r", 0)),
        ("open", (str(layout / ".cache" / "tool" / "x"), "r", os.O_RDONLY)),
        ("open", (str(layout / "made-by-the-run" / "x"), "w", os.O_WRONLY | os.O_CREAT)),
        ("open", (str(layout / "tmpabc"), None, os.O_RDWR | os.O_CREAT | os.O_EXCL)),
        ("open", (3, "r", os.O_RDONLY)),
        ("open", ("/usr/lib/os.py", "r", 0)),
        ("compile", (b"", str(layout / "neighbour"))),
    ) == []
    recorder.allow(layout / "neighbour" / "data")
    assert reads_of(recorder, ("open", (str(layout / "neighbour" / "data" / "A.json"),
                                        "r", os.O_RDONLY))) == []


def test_pytests_temporary_directories_beside_a_checkout_in_the_temp_dir_are_allowed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A clone made straight in the temporary directory has pytest's `pytest-of-<user>`
    beside it; the run's own temporary directories are not reads beside the checkout."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    pytest_root = Path(pytest_temp_root())
    (pytest_root / "pytest-1").mkdir(parents=True)
    (tmp_path / "repo").mkdir()
    (tmp_path / "shared").mkdir()
    recorder = SiblingReads(tmp_path / "repo", default_allowed())
    assert reads_of(
        recorder,
        ("open", (str(pytest_root / "pytest-1" / ".lock"), "r", os.O_RDONLY)),
        ("os.scandir", (str(pytest_root),)),
        ("open", (str(tmp_path / "shared" / "x"), "r", os.O_RDONLY)),
    ) == [str(tmp_path / "shared" / "x")]


def test_a_checkout_at_the_filesystem_root_watches_nothing() -> None:
    recorder = SiblingReads(Path("/"))
    assert reads_of(recorder, ("open", ("/etc/hostname", "r", 0)), ("os.listdir", ("/",))) == []


def test_a_run_that_reads_beside_the_checkout_fails(layout: Path) -> None:
    """The conftest's guard, installed for real in a pytest run of a checkout in ``layout``."""
    checkout = layout / "repo"
    for name in ("tests/__init__.py", "tests/conftest.py", "tests/sibling_reads.py"):
        shutil.copy(REPO_ROOT / name, checkout / name)
    (checkout / "pytest.ini").write_text("[pytest]\n")
    (checkout / "tests" / "test_reads.py").write_text(
        "import os\n"
        "from pathlib import Path\n\n"
        "def test_reads_inside() -> None:\n"
        "    Path(os.environ['INSIDE']).read_text()\n\n"
        "def test_reads_beside() -> None:\n"
        "    Path(os.environ['BESIDE']).read_text()\n")
    beside = layout / "neighbour" / "data" / "A.json"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
           "INSIDE": str(checkout / "tests" / "data.txt"), "BESIDE": str(beside)}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_reads.py"],
        cwd=checkout, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == pytest.ExitCode.TESTS_FAILED, run.stdout + run.stderr
    assert "2 passed" in run.stdout  # the tests themselves passed: the guard failed the run
    section = run.stdout[run.stdout.index("reads beside the checkout"):]
    assert f"open {beside}  (in tests/test_reads.py::test_reads_beside (call))" in section
    assert "data.txt" not in section and section.count(" open ") == 1
