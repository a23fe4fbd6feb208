"""The controller's decisions: pure functions from (image, request, now_ms) to records and a response.

Requests and responses are the generated message classes (clients.protocol.messages), which
the network layer decodes and encodes.
The records must be committed through the quorum before the response is sent.
"""

from __future__ import annotations

from typing import Any

from metadata.records import MetadataRecord

Decision = tuple[list[MetadataRecord], Any]
"""What every decision returns: records to commit, then the response body."""
