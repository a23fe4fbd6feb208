"""When iptables cannot be had, the partition helper says why, and fault tests skip with
that reason, or fail under CI=true."""

from __future__ import annotations

import pytest

from cluster.testing import network_partition
from cluster.testing.network_partition import PartitionToolError, ensure_iptables
from tests.integration.fault_support import unavailable


def test_missing_iptables_without_root(monkeypatch) -> None:
    monkeypatch.setattr(network_partition.shutil, "which", lambda name: None)
    monkeypatch.setattr(network_partition.os, "geteuid", lambda: 1000)
    with pytest.raises(PartitionToolError, match="installing it needs root"):
        ensure_iptables()


def test_missing_iptables_without_apt(monkeypatch) -> None:
    monkeypatch.setattr(network_partition.shutil, "which", lambda name: None)
    monkeypatch.setattr(network_partition.os, "geteuid", lambda: 0)
    with pytest.raises(PartitionToolError, match="apt-get is not available"):
        ensure_iptables()


def test_unavailable_skips_with_the_reason(monkeypatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no iptables here"):
        unavailable("no iptables here")


def test_unavailable_fails_under_ci(monkeypatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true and no iptables here"):
        unavailable("no iptables here")
