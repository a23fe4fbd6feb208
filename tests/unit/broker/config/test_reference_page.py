"""docs/configuration.md is what the generator writes from the config definitions."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import reference_page
from broker.config.definitions import SERVER_KEYS
from broker.config.log_defaults import log_default_keys
from metadata.topic_configs import TOPIC_CONFIGS


def test_the_checked_in_page_is_what_the_generator_writes() -> None:
    assert reference_page.PAGE.read_text() == reference_page.render(), (
        "docs/configuration.md is not current: run scripts/generate-config-docs")


def section(page: str, heading: str) -> str:
    start = page.index(f"\n## {heading}\n")
    end = page.find("\n## ", start + 1)
    return page[start:end if end != -1 else None]


def test_every_key_has_one_row_with_its_type_and_default() -> None:
    page = reference_page.render()
    server = section(page, "Server keys")
    for key in SERVER_KEYS:
        assert server.count(f"\n| `{key.name}` | {key.type} | "
                            f"{reference_page.default_cell(key.default)} | ") == 1, key.name
    log_defaults = section(page, "Broker-level log defaults")
    for name, entry in log_default_keys().items():
        assert f"\n| `{name}` | {entry.key.type} | " in log_defaults, name
        assert log_defaults.count(f"\n| `{name}` |") == 1
    topics = section(page, "Topic configs")
    for name in TOPIC_CONFIGS:
        assert topics.count(f"\n| `{name}` |") == 1, name


def test_a_pipe_in_a_doc_does_not_split_its_row() -> None:
    assert reference_page.cell("a | b\n  c") == "a \\| b c"


def test_check_fails_on_a_stale_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "configuration.md"
    monkeypatch.setattr(reference_page, "PAGE", page)
    assert reference_page.main(["--check"]) == 1
    assert "not current: docs/configuration.md" in capsys.readouterr().err
    assert reference_page.main([]) == 0
    assert page.read_text() == reference_page.render()
    assert reference_page.main(["--check"]) == 0
    page.write_text(page.read_text().replace("| int |", "| long |", 1))
    assert reference_page.main(["--check"]) == 1
