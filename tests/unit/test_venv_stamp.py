"""scripts/lib/venv.sh installs the project into .venv again when pyproject.toml or the
install command changed since the last install, and only then. Run on a copy of the script
with a stand-in for the venv's python that records its arguments."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from tests.conftest import REPO_ROOT


def checkout(tmp_path: Path) -> Path:
    """A checkout holding venv.sh, a pyproject.toml and a .venv whose python writes its
    arguments to ``tmp_path / "calls"``."""
    root = tmp_path / "checkout"
    (root / "scripts" / "lib").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "scripts" / "lib" / "venv.sh", root / "scripts" / "lib")
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    python = root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\necho "$*" >> {tmp_path / "calls"}\n')
    python.chmod(0o755)
    return root


def ensure_venv(tmp_path: Path) -> list[str]:
    """Run ensure_venv test in the checkout; the commands its venv's python was given, across
    runs."""
    subprocess.run(["bash", "-c", ". scripts/lib/venv.sh && ensure_venv test"],
                   cwd=tmp_path / "checkout", check=True, timeout=60)
    calls = tmp_path / "calls"
    return calls.read_text().splitlines() if calls.exists() else []


def test_installs_once_then_only_when_pyproject_changes(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    assert ensure_venv(tmp_path) == ["-m pip install -q -e .[test]"]
    assert ensure_venv(tmp_path) == ["-m pip install -q -e .[test]"]
    (root / "pyproject.toml").write_text("[project]\nname = 'y'\n")
    assert len(ensure_venv(tmp_path)) == 2


def test_a_venv_installed_by_another_command_is_installed_again(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    # The stamp of the earlier command, which stamped pyproject.toml's digest alone.
    digest = hashlib.sha256((root / "pyproject.toml").read_bytes()).hexdigest()
    (root / ".venv" / ".raftka-installed-test").write_text(digest + "\n")
    assert ensure_venv(tmp_path) == ["-m pip install -q -e .[test]"]
    assert ensure_venv(tmp_path) == ["-m pip install -q -e .[test]"]
