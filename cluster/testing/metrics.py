"""Scraping a node's /metrics endpoint in tests, parsed by prometheus-client's own parser."""

from __future__ import annotations

import urllib.request
from typing import Iterable, Mapping

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample


def scrape(url: str, timeout: float = 5.0) -> list[Sample]:
    """Every sample `url` serves (blocking: call it through trio.to_thread in trio code)."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        text = response.read().decode()
    return [sample for family in text_string_to_metric_families(text)
            for sample in family.samples]


def value(samples: Iterable[Sample], name: str, labels: Mapping[str, str] | None = None
          ) -> float | None:
    """The value of the sample `name` whose labels include `labels` (None if absent)."""
    wanted = dict(labels or {})
    for sample in samples:
        if sample.name == name and all(sample.labels.get(k) == v for k, v in wanted.items()):
            return sample.value
    return None


def metrics_url(host: str, port: int) -> str:
    return f"http://{host}:{port}/metrics"
