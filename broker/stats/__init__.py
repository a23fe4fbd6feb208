"""Plain statistics the hot paths keep (counters and a fixed-bucket histogram): no I/O and
no imports of the broker's other packages, so the log, replica and request layers can count
while the Prometheus collectors in `broker.metrics` read them at scrape time."""
