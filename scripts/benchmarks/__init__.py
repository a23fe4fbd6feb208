"""The benchmarks behind scripts/bench, bench-groups, bench-log and bench-spark (one module
per script, named after it, plus one per `scripts/bench` mode), and what they share: a
throwaway cluster, raw requests, the native load generator, per-node CPU time and the
in-memory produce sink."""
