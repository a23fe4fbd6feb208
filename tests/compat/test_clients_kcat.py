"""kcat (librdkafka's command-line client, a Debian package) against a launcher cluster:
`kcat -P` produces keyed records with headers per codec, `kcat -C -e` reads them back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.compat.cluster import Cluster

RECORDS = 2_000
CODECS = ["none", "gzip", "lz4", "snappy", "zstd"]


@pytest.fixture(scope="module")
def kcat() -> str:
    path = shutil.which("kcat")
    if path is None:
        reason = "kcat is not installed (Debian package `kcat`; scripts/test installs it as root)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def test_kcat_produce_then_consume(kcat: str, cluster: Cluster) -> None:
    for codec in CODECS:
        topic = f"kcat-{codec}"
        cluster.create_topic(topic)
        lines = "".join(f"key-{i}\tvalue-{codec}-{i}\n" for i in range(RECORDS))
        subprocess.run(
            [kcat, "-P", "-b", cluster.bootstrap, "-t", topic, "-p", "0", "-K", "\t",
             "-H", f"codec={codec}", "-z", codec, "-X", "broker.address.family=v4"],
            input=lines, text=True, check=True, timeout=60, capture_output=True)
        result = subprocess.run(
            [kcat, "-C", "-b", cluster.bootstrap, "-t", topic, "-p", "0", "-o", "beginning",
             "-e", "-J", "-q", "-X", "broker.address.family=v4"],
            text=True, check=True, timeout=60, capture_output=True)
        messages = [json.loads(line) for line in result.stdout.splitlines() if line]
        assert [m["offset"] for m in messages] == list(range(RECORDS)), codec
        for i, message in enumerate(messages):
            assert (message["key"], message["payload"]) == (f"key-{i}", f"value-{codec}-{i}")
            assert message["headers"] == ["codec", codec]
