"""A one-node cluster with a PLAINTEXT and a SASL_PLAINTEXT listener, started by the
launcher (the code path of scripts/bootstrap-quorum)."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from cluster.launcher import LauncherError, bootstrap_quorum, stop_quorum
from cluster.launcher.layout import CONTROLLER_PORT_STEP
from cluster.launcher.ports import cluster_ports, free_ports, pick_base_port
from tests.compat.cluster import HOST, Cluster


class SaslCluster(Cluster):
    sasl_port: int

    @property
    def sasl_bootstrap(self) -> str:
        return f"{HOST}:{self.sasl_port}"


@contextmanager
def sasl_cluster(directory: Path, plain_jaas: str, format_args: Sequence[str] = (),
                 overrides: Mapping[str, str] | None = None) -> Iterator[SaslCluster]:
    """PLAIN users from `plain_jaas`; SCRAM-SHA-256/512 enabled too. Killed afterwards."""
    for attempt in range(5):
        base = pick_base_port(1, 0)
        taken = set(cluster_ports(1, 0, base))
        sasl_port = next(p for p in free_ports(4) if p not in taken)
        settings = {
            "listeners": f"PLAINTEXT://{HOST}:{base},SASL_PLAINTEXT://{HOST}:{sasl_port},"
                         f"CONTROLLER://{HOST}:{base + CONTROLLER_PORT_STEP}",
            "advertised.listeners": f"PLAINTEXT://{HOST}:{base},"
                                    f"SASL_PLAINTEXT://{HOST}:{sasl_port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,"
                                              "SASL_PLAINTEXT:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas,
            **(overrides or {}),
        }
        try:
            info = bootstrap_quorum(directory / f"c{attempt}", 1, 0, base, settings,
                                    timeout=45.0, format_args=format_args)
        except LauncherError as exc:
            if "already in use" in str(exc).lower():
                continue
            raise
        break
    else:
        raise LauncherError("no free ports for the SASL cluster")
    started = SaslCluster(info)
    started.sasl_port = sasl_port
    try:
        yield started
    finally:
        try:
            stop_quorum(info.dir, kill=True, timeout=10.0)
        except LauncherError:
            pass
