"""Shared test fixtures: where the repository is; and the guard that keeps the suite from
reading files beside the checkout (a fresh clone has nothing there)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.sibling_reads import SiblingReads, default_allowed

REPO_ROOT = Path(__file__).resolve().parent.parent

SIBLING_READS = SiblingReads(REPO_ROOT, default_allowed())
sys.addaudithook(SIBLING_READS.audit)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session", autouse=True)
def _allow_pytest_temporary_directories(tmp_path_factory: pytest.TempPathFactory) -> None:
    # The parent of this run's base directory also holds the previous runs' (pytest-of-<user>).
    SIBLING_READS.allow(tmp_path_factory.getbasetemp().parent)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if SIBLING_READS.reads:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if SIBLING_READS.reads:
        terminalreporter.section("reads beside the checkout", red=True, bold=True)
        terminalreporter.write_line(
            f"the suite read {len(SIBLING_READS.reads)} time(s) outside {REPO_ROOT}, beside it "
            "(a fresh clone has nothing there):")
        for line in SIBLING_READS.report():
            terminalreporter.write_line(f"  {line}")
