"""Shared test fixtures: where the repository and the reference protocol files are."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = REPO_ROOT.parent / "shared"
KAFKA_MESSAGES_DIR = SHARED_DIR / "kafka-protocol" / "message"
KAFKA_METADATA_RECORDS_DIR = SHARED_DIR / "kafka-protocol" / "metadata"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def kafka_messages_dir() -> Path:
    if not KAFKA_MESSAGES_DIR.is_dir():
        pytest.fail(f"reference protocol definitions missing: {KAFKA_MESSAGES_DIR}")
    return KAFKA_MESSAGES_DIR


@pytest.fixture(scope="session")
def kafka_metadata_records_dir() -> Path:
    if not KAFKA_METADATA_RECORDS_DIR.is_dir():
        pytest.fail(f"reference metadata records missing: {KAFKA_METADATA_RECORDS_DIR}")
    return KAFKA_METADATA_RECORDS_DIR
