"""The README and the pages under docs/ document every config key and every command a user
can run."""

from __future__ import annotations

import argparse

import pytest

from broker.cli.main import build_parser
from broker.config.definitions import SERVER_KEYS
from broker.config.log_defaults import log_default_keys
from clients.consumer.config import CONSUMER_KEYS
from clients.producer.config import PRODUCER_KEYS
from metadata.topic_configs import TOPIC_CONFIGS
from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text()
# What a user reads: the README and the pages it links to under docs/.
DOCUMENTED = README + "".join(
    page.read_text() for page in sorted((REPO_ROOT / "docs").glob("*.md")))


def all_config_keys() -> list[str]:
    return ([key.name for key in SERVER_KEYS] + list(log_default_keys())
            + list(TOPIC_CONFIGS))


@pytest.mark.parametrize("key", all_config_keys())
def test_every_config_key_is_documented(key: str) -> None:
    assert f"`{key}`" in DOCUMENTED


@pytest.mark.parametrize("key", sorted({key.name for key in PRODUCER_KEYS + CONSUMER_KEYS}))
def test_every_client_config_key_is_documented(key: str) -> None:
    assert f"`{key}`" in DOCUMENTED


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
    assert f"`{command}" in DOCUMENTED


@pytest.mark.parametrize("script", ["quickstart", "test", "bootstrap-quorum", "start-node",
                                    "stop-quorum", "bench-codec", "bench-log", "bench",
                                    "derive-protocol", "generate-messages",
                                    "generate-config-docs"])
def test_every_script_is_documented_and_exists(script: str) -> None:
    assert (REPO_ROOT / "scripts" / script).exists()
    assert f"./scripts/{script}" in DOCUMENTED


def test_the_minimal_single_node_config_is_the_shipped_sample() -> None:
    """The README shows config/server.properties without its comments, and it keeps the
    internal topics at one replica, as a single node needs."""
    sample = (REPO_ROOT / "config" / "server.properties").read_text()
    lines = [line for line in sample.splitlines() if line.strip() and not line.startswith("#")]
    section = README[README.index("### A single node"):README.index("### Three nodes")]
    assert "```\n" + "\n".join(lines) + "\n```" in section
    assert "offsets.topic.replication.factor=1" in lines
    assert "transaction.state.log.replication.factor=1" in lines


@pytest.mark.parametrize("sample", ["server.properties", "cluster/node-1.properties",
                                    "cluster/node-2.properties", "cluster/node-3.properties"])
def test_sample_configs_are_valid_and_documented(sample: str) -> None:
    from broker.config import ServerConfig

    config = ServerConfig.from_file(REPO_ROOT / "config" / sample)
    assert config.unknown_keys == []
    assert f"`config/{sample}`" in README or f"`{sample.split('/')[-1]}`" in README
    internal = config.offsets_topic_replication_factor
    assert internal <= len(config.voters)  # every voter of the samples is also a broker
    assert config.transaction_state_log_replication_factor == internal
