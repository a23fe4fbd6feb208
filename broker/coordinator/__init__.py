"""What every coordinator over a compacted internal topic shares (Kafka's
coordinator-common): which partition owns a key, which partitions this broker leads."""
