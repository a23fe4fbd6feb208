"""`scripts/test` installing kcat with apt-get says so in one line and keeps apt's output to
itself. Run on a copy of the script with stand-ins for apt-get, id and the venv's python, and
a PATH holding only the tools it needs, so nothing is installed and no kcat is found."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

TOOLS = ("bash", "sha256sum", "cut", "cat", "dirname")


def executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def run_script(tmp_path: Path, apt_exit: int) -> tuple[subprocess.CompletedProcess[str], Path]:
    checkout = tmp_path / "checkout"
    (checkout / "scripts" / "lib").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "scripts" / "test", checkout / "scripts" / "test")
    shutil.copy(REPO_ROOT / "scripts" / "lib" / "venv.sh", checkout / "scripts" / "lib")
    (checkout / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    # Stamped as installed already (the stamp as scripts/lib/venv.sh makes it).
    digest = subprocess.run(["bash", "-c", ". scripts/lib/venv.sh && venv_stamp test"],
                            cwd=checkout, capture_output=True, text=True,
                            check=True).stdout.strip()
    (checkout / ".venv" / "bin").mkdir(parents=True)
    (checkout / ".venv" / ".raftka-installed-test").write_text(digest + "\n")
    executable(checkout / ".venv" / "bin" / "python", '#!/bin/sh\necho "pytest $*"\n')

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"{tool} is not installed")
        (bin_dir / tool).symlink_to(found)
    executable(bin_dir / "id", "#!/bin/sh\necho 0\n")
    calls = tmp_path / "apt-calls"
    # apt-get as it is: chatty on both streams.
    executable(bin_dir / "apt-get", f'#!/bin/sh\necho "$*" >> {calls}\n'
                                    'echo "Reading package lists..."\n'
                                    'echo "debconf: unable to initialize frontend" >&2\n'
                                    f'exit {apt_exit}\n')
    result = subprocess.run([str(checkout / "scripts" / "test"), "-q", "tests/unit"],
                            capture_output=True, text=True, timeout=60,
                            env={"PATH": str(bin_dir), "HOME": os.environ.get("HOME", "/")})
    return result, calls


def test_installing_kcat_prints_one_line(tmp_path: Path) -> None:
    result, calls = run_script(tmp_path, apt_exit=0)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "scripts/test: installing kcat with apt-get (for the kcat compatibility test)"]
    assert result.stdout.splitlines() == ["pytest -m pytest -q tests/unit"]
    assert "install -y -qq kcat" in calls.read_text()


def test_a_failed_install_adds_one_line_saying_the_test_will_skip(tmp_path: Path) -> None:
    result, _ = run_script(tmp_path, apt_exit=100)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "scripts/test: installing kcat with apt-get (for the kcat compatibility test)",
        "scripts/test: could not install kcat; its test will skip (or fail under CI)"]
