"""The node raises its open-files soft limit to the hard limit at start."""

from __future__ import annotations

import subprocess
import sys

import pytest

resource = pytest.importorskip("resource")


def test_the_soft_limit_is_raised_to_the_hard_limit() -> None:
    # In a child process with a lowered soft limit, so this process's limit stays as it is.
    program = (
        "import resource\n"
        "from broker.open_files import raise_open_files_limit\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))\n"
        "now = raise_open_files_limit()\n"
        "print(now, resource.getrlimit(resource.RLIMIT_NOFILE)[0], hard)\n")
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         check=True, timeout=60).stdout.split()
    now, soft, hard = (int(x) for x in out)
    expected = hard if hard != resource.RLIM_INFINITY else soft
    assert soft == now == expected and soft > 256
