"""Large requests: a frame of more than `LARGE_REQUEST_BYTES`, or a Produce naming more than
`MANY_PARTITIONS` partitions. One that names very many topics, partitions or resources takes
seconds of pure Python to decode and answer, and its decoded form is about ten times its
frame; a large Produce's appends check every record of a compacted topic. So a server
handles such requests one at a time, decodes and encodes them in a worker thread, where the
interpreter's switch interval lets the event loop, and so every other client, run, and
handles each before its connection's next request is read (broker.handled_alone), so that
its appends may let the other connections run midway."""

from __future__ import annotations

from functools import partial
from typing import Any, Sequence

import trio

from broker.apis.request import DecodedRequest
from broker.network.codec import WireCodec
from clients.protocol.messages.produce import ProduceRequestData

LARGE_REQUEST_BYTES = 1 << 20
# A Produce naming more partitions than this takes the lane too, is handled before its
# connection's next request is read, and is answered from a worker thread: its answer lists
# every partition it names, and its appends let the other connections run every so often.
MANY_PARTITIONS = 1000
_PRODUCE = 0


def _api_key(frame: memoryview) -> int:
    return int.from_bytes(frame[:2], "big", signed=True) if len(frame) >= 2 else -1


class LargeRequests:
    """The server's one-at-a-time lane for large requests."""

    def __init__(self, threshold: int = LARGE_REQUEST_BYTES) -> None:
        self.threshold = threshold
        self._lane = trio.CapacityLimiter(1)

    @property
    def waiting(self) -> int:
        """Requests read and waiting for the lane."""
        return self._lane.statistics().tasks_waiting

    def off_loop(self, frame: memoryview) -> bool:
        """Whether `frame` is decoded in a worker thread."""
        return len(frame) > self.threshold

    async def enter(self, owner: object) -> None:
        """Wait for the lane; `owner` holds it until `leave(owner)`."""
        await self._lane.acquire_on_behalf_of(owner)

    def leave(self, owner: object) -> None:
        self._lane.release_on_behalf_of(owner)

    @staticmethod
    def names_many_partitions(request: DecodedRequest, frame_size: int) -> bool:
        """Whether a decoded Produce names more than MANY_PARTITIONS partitions (each takes
        at least 8 bytes of its frame, so a smaller frame is not looked into)."""
        if frame_size <= MANY_PARTITIONS * 8 or request.api_key != _PRODUCE:
            return False
        body: ProduceRequestData = request.body
        return sum(len(topic.partition_data) for topic in body.topic_data) > MANY_PARTITIONS

    @staticmethod
    async def decode(codec: WireCodec, frame: memoryview, max_elements: int | None
                     ) -> DecodedRequest:
        return await trio.to_thread.run_sync(
            partial(codec.decode_request, frame, max_elements=max_elements))

    @staticmethod
    async def encode(codec: WireCodec, api_key: int, api_version: int, correlation_id: int,
                     body: Any) -> Sequence[object]:
        return await trio.to_thread.run_sync(codec.encode_response_chunks, api_key,
                                             api_version, correlation_id, body)
