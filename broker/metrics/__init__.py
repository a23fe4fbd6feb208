"""Each node's metrics for Prometheus: hot-path counters (`stats`), collectors that read the
broker's and the controller's live state at scrape time, and the `/metrics` endpoint."""
