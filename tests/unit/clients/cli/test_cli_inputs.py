"""What the console tools read: stdin lines of any length in linear time, --max-messages,
and configuration files that are missing or not UTF-8."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from clients.cli.admin_tool import read_config_file
from clients.cli.console_consumer import record_limit
from clients.cli.console_producer import LineSplitter
from clients.cli.main import CommandError
from broker.config import ConfigError, ServerConfig, load_properties
from clients.common.properties import PropertiesSyntaxError


def test_lines_split_across_chunks_come_out_whole() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"ab") == []
    assert splitter.feed(b"c\r") == []
    assert splitter.feed(b"\nd\n\ne") == [b"abc", b"d", b""]
    assert splitter.feed(b"f") == []
    assert splitter.end() == [b"ef"]  # the last line needs no newline
    assert splitter.end() == []


def test_a_long_line_takes_linear_time() -> None:
    """A 64 MiB line read 64 KiB at a time: a reader that copies what it holds for every
    chunk does 1024 copies averaging 32 MiB, seconds of work; one that joins the pieces
    once copies 64 MiB."""
    chunk = b"x" * (1 << 16)
    splitter = LineSplitter()
    started = time.perf_counter()
    for _ in range(1024):
        assert splitter.feed(chunk) == []
    lines = splitter.feed(b"\nnext")
    elapsed = time.perf_counter() - started
    assert [len(line) for line in lines] == [1 << 26]
    assert splitter.end() == [b"next"]
    assert elapsed < 2.0, f"{elapsed:.2f} s for a 64 MiB line"


def test_max_messages_minus_one_means_no_limit() -> None:
    assert record_limit(None) is None
    assert record_limit(-1) is None
    assert record_limit(0) == 0
    assert record_limit(5) == 5
    with pytest.raises(CommandError, match="--max-messages -2: expected a count, or -1"):
        record_limit(-2)


@pytest.fixture
def latin1_file(tmp_path: Path) -> Path:
    path = tmp_path / "client.properties"
    path.write_bytes(b"security.protocol=SASL_PLAINTEXT\nsasl.username=ren\xe9\n")
    return path


def test_a_properties_file_that_is_not_utf8_names_the_line_and_byte(
        latin1_file: Path) -> None:
    with pytest.raises(PropertiesSyntaxError) as bad:
        load_properties(latin1_file)
    assert str(bad.value) == ("not valid UTF-8: byte 0xe9 on line 2 (offset 50); save the "
                              "file as UTF-8")


def test_a_client_config_file_error_names_the_option_and_the_file(
        latin1_file: Path, tmp_path: Path) -> None:
    with pytest.raises(CommandError) as bad:
        read_config_file(str(latin1_file), "--producer.config")
    assert str(bad.value) == (f"--producer.config: {latin1_file}: not valid UTF-8: byte "
                              "0xe9 on line 2 (offset 50); save the file as UTF-8")
    missing = tmp_path / "absent.properties"
    with pytest.raises(CommandError) as absent:
        read_config_file(str(missing), "--command-config")
    assert str(absent.value) == (f"--command-config: cannot read {missing}: No such file "
                                 "or directory")


def test_a_server_config_that_is_not_utf8_stops_start_up_naming_the_file(
        latin1_file: Path) -> None:
    with pytest.raises(ConfigError) as bad:
        ServerConfig.from_file(latin1_file)
    assert str(latin1_file) in str(bad.value) and "not valid UTF-8" in str(bad.value)
