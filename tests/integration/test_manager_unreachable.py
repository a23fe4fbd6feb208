"""`raftka manager` on an address it cannot listen on (taken, or a host name that does not
resolve) stops before serving, with one line naming the address. Real processes, real
sockets."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

def _managers(*argvs: list[str]) -> list[tuple[int, str]]:
    """(exit status, stderr) of `raftka manager` with each argument list, run at once."""
    processes = [subprocess.Popen([sys.executable, "-m", "broker.cli.main", "manager",
                                   "--bootstrap-server", "127.0.0.1:9", *argv],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for argv in argvs]
    results = []
    for process in processes:
        try:
            _, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
        results.append((process.returncode, err))
    return results


def test_listen_on_a_taken_port_or_an_unknown_host_is_one_line_naming_it(
        tmp_path: Path) -> None:
    users = tmp_path / "users"
    users.write_text("admin:secret\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        (taken_status, taken_err), (unknown_status, unknown_err) = _managers(
            ["--listen", f"127.0.0.1:{port}"],
            ["--listen", "no-such-host.invalid:8089", "--password-file", str(users)])
    assert taken_status == 1
    assert taken_err == (f"raftka manager: cannot listen on 127.0.0.1:{port}: address "
                         f"already in use\n")
    assert unknown_status == 1
    assert unknown_err.startswith("raftka manager: cannot listen on "
                                  "no-such-host.invalid:8089: ")
    assert unknown_err.count("\n") == 1
