"""Tools that run beside the broker: the benchmark's in-memory baseline broker."""
