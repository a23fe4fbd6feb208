"""Benchmark helpers shared by scripts/bench and scripts/bench-groups (run from the checkout)."""
