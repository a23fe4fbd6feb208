"""The README documents every config key and every command a user can run."""

from __future__ import annotations

import argparse

import pytest

from broker.cli.main import build_parser
from broker.config.definitions import SERVER_KEYS
from broker.config.log_defaults import log_default_keys
from metadata.topic_configs import TOPIC_CONFIGS
from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text()


def all_config_keys() -> list[str]:
    return ([key.name for key in SERVER_KEYS] + list(log_default_keys())
            + list(TOPIC_CONFIGS))


@pytest.mark.parametrize("key", all_config_keys())
def test_every_config_key_is_documented(key: str) -> None:
    assert f"`{key}`" in README


def subcommands(parser: argparse.ArgumentParser, prefix: str = "raftka") -> list[str]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                nested = subcommands(sub, f"{prefix} {name}")
                found.extend(nested or [f"{prefix} {name}"])
    return found


@pytest.mark.parametrize("command", subcommands(build_parser()))
def test_every_command_is_documented(command: str) -> None:
    assert f"`{command}" in README


@pytest.mark.parametrize("script", ["quickstart", "test", "bootstrap-quorum", "start-node",
                                    "stop-quorum", "bench-codec", "bench-log", "bench"])
def test_every_script_is_documented_and_exists(script: str) -> None:
    assert (REPO_ROOT / "scripts" / script).exists()
    assert f"./scripts/{script}" in README
