"""`scripts/bench --tls`: one node with a PLAINTEXT and an SSL listener (a CA and a server
certificate made for the run); confluent-kafka produces (acks=1) and consumes over both,
taking turns each round."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import trustme

from cluster.launcher import bootstrap_quorum
from cluster.launcher.layout import ClusterInfo
from scripts.benchmarks.confluent_runs import broker_cpu, consume, median_run, produce


def tls_cluster(directory: Path) -> tuple[ClusterInfo, str, str, dict[str, str]]:
    """One node with PLAINTEXT and SSL listeners and a CA for the run; (info, plaintext
    bootstrap, ssl bootstrap, client settings for SSL)."""
    ca = trustme.CA()
    ca_file, keystore = directory / "ca.pem", directory / "server.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(keystore))
    for _ in range(5):
        base = random.randrange(20000, 31000)
        plain, secure, controller = base, base + 50, base + 100
        overrides = {
            "listeners": f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{secure},"
                         f"CONTROLLER://127.0.0.1:{controller}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{secure}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,"
                                              "CONTROLLER:PLAINTEXT",
            "ssl.keystore.location": str(keystore)}
        try:
            info = bootstrap_quorum(directory / f"c{base}", 1, 0, base, overrides)
        except Exception as exc:
            if "in use" not in str(exc):
                raise
            continue
        return (info, f"127.0.0.1:{plain}", f"127.0.0.1:{secure}",
                {"security.protocol": "SSL", "ssl.ca.location": str(ca_file)})
    raise SystemExit("no free ports found")


def tls_bench(plain: str, secure: str, ssl_config: dict[str, str], pid: int | None,
              records: int, rounds: int) -> dict[str, Any]:
    """Produce, then consume, over PLAINTEXT and SSL in alternation."""
    sides: dict[str, tuple[str, dict[str, str] | None]] = {"plaintext": (plain, None),
                                                           "ssl": (secure, ssl_config)}
    result: dict[str, Any] = {"mode": "tls", "records": records, "rounds": max(rounds, 1)}
    for phase in ("produce", "consume"):
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
        names = list(sides)
        for round_ in range(max(rounds, 1)):
            shift = round_ % len(names)
            for name in names[shift:] + names[:shift]:
                servers, extra = sides[name]
                run: dict[str, Any] = {}
                with broker_cpu(pid, run):
                    if phase == "produce":
                        run.update(produce(servers, "bench", records, "1", extra=extra))
                    else:
                        run.update(consume(servers, "bench", records, extra=extra))
                runs[name].append(run)
        medians = {name: median_run(r) for name, r in runs.items()}
        plain_rate = medians["plaintext"]["records_per_s"]
        ssl_rate = medians["ssl"]["records_per_s"]
        result[phase] = {**medians, "ssl_vs_plaintext":
                         round(ssl_rate / plain_rate, 2) if plain_rate and ssl_rate else None}
    return result
