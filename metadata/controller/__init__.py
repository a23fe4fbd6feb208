"""The controller's decisions: pure functions from (image, request, now_ms) to records and a response.

Requests and responses are dicts keyed by the snake_case field names of Kafka's message
definitions at their latest version, so the network layer can pass them straight through.
The records must be committed through the quorum before the response is sent.
"""

from __future__ import annotations

from typing import Any

from metadata.records import MetadataRecord

Decision = tuple[list[MetadataRecord], dict[str, Any]]
"""What every decision returns: records to commit, then the response body."""
