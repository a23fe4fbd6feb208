"""Unit test folders mirror the source packages: a test of `broker/log/manager.py` lives under
tests/unit/broker/log/, so a reader finds a module's tests at the same path. Only the
repository-wide tests (imports, layering, docs, scripts) sit at the top of tests/unit."""

from __future__ import annotations

from pathlib import Path


def _test_folders(unit: Path) -> list[Path]:
    """The folders below `unit` that hold Python files (one left with only a __pycache__ by a
    checkout of another branch is not a test folder)."""
    return sorted({parent for path in unit.rglob("*.py") if "__pycache__" not in path.parts
                   for parent in path.relative_to(unit).parents if parent != Path(".")},
                  key=str)


def test_every_unit_test_folder_names_a_source_package(repo_root: Path) -> None:
    unit = repo_root / "tests" / "unit"
    unmatched = [str(folder) for folder in _test_folders(unit)
                 if not (repo_root / folder / "__init__.py").is_file()]
    assert not unmatched, (
        f"folders under tests/unit with no source package at the same path: {unmatched}")


def test_every_unit_test_folder_is_a_package(repo_root: Path) -> None:
    # Without __init__.py two test modules of the same name in different folders clash.
    unit = repo_root / "tests" / "unit"
    missing = [str(folder) for folder in _test_folders(unit)
               if not (unit / folder / "__init__.py").is_file()]
    assert not missing, f"folders under tests/unit without __init__.py: {missing}"
