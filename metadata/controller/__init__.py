"""The controller's decisions: pure functions from (image, request, now_ms) to records and a response.

Requests are the generated message classes (clients.protocol.messages) of the APIs in
`clients.protocol.TYPED_REQUESTS`, else dicts keyed by the snake_case field names of Kafka's
message definitions; responses are message classes or such dicts, which the network layer
encodes as they are.
The records must be committed through the quorum before the response is sent.
"""

from __future__ import annotations

from typing import Any

from metadata.records import MetadataRecord

Decision = tuple[list[MetadataRecord], Any]
"""What every decision returns: records to commit, then the response body."""
