"""Each node's metrics for Prometheus: collectors that read the broker's and the controller's
live state (and the hot-path counters of `broker.stats`) at scrape time, and the `/metrics`
endpoint."""
