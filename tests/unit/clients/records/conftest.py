"""Fixtures for the record codec tests."""

from __future__ import annotations

import sys

import pytest

from clients.records import compression


@pytest.fixture
def codec_packages_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the optional snappy and zstd packages unimportable for one test.

    A `None` entry in sys.modules makes `import` raise ImportError, the same thing a machine
    without the packages sees; the codec module's cached lookups are cleared around it.
    """
    for name in ("snappy", "cramjam", "zstandard"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(compression, "_snappy", None)
    monkeypatch.setattr(compression, "_zstd", None)
