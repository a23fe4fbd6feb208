"""Topic auto-creation for Metadata requests (`auto.create.topics.enable`).

As Kafka's AutoTopicCreationManager in KRaft mode: the missing topics of one Metadata
request go to the active controller as one CreateTopics, in the background, and the
Metadata answer says LEADER_NOT_AVAILABLE meanwhile so the client asks again shortly.

A batch the controller would refuse as a whole, being over its bounds on one request
(`metadata.controller.request_limits`: 10,000 partitions, 10,000 records), is not sent: its
topics are answered UNKNOWN_TOPIC_OR_PARTITION, what Kafka's Metadata answers for them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import trio

from broker.apis.common import Slicer
from broker.group.routing import CONSUMER_OFFSETS_TOPIC, offsets_topic_settings
from clients.protocol import SUPPORTED_VERSIONS, ApiKey, ErrorCode, as_message
from metadata.controller.request_limits import fits_one_create_topics
from metadata.image import MetadataImage
from metadata.topic_names import topic_name_error

if TYPE_CHECKING:
    from broker.config import ServerConfig

logger = logging.getLogger(__name__)

CREATE_TIMEOUT_MS = 30_000


class TopicAutoCreator:
    """Creates missing topics through the controller; `ensure_topics` never blocks on it
    while `run` is active (it awaits the controller only when no background nursery runs)."""

    def __init__(self, config: "ServerConfig", channel: Any,
                 image: Callable[[], MetadataImage]) -> None:
        self._config = config
        self._channel = channel
        self._image = image
        self._in_flight: set[str] = set()
        self._nursery: trio.Nursery | None = None

    @property
    def enabled(self) -> bool:
        return self._config.auto_create_topics_enable and self._channel is not None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Host the background creations until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                task_status.started()
                await trio.sleep_forever()
            finally:
                self._nursery = None

    async def ensure_topics(self, names: Sequence[str]) -> Mapping[str, int]:
        """Start creating the missing ones of `names`; error code per name for Metadata.

        Names left out of the answer keep the caller's own error (UNKNOWN_TOPIC_OR_PARTITION
        when auto-creation is off).
        """
        if not self.enabled:
            return {}
        image = self._image()
        codes: dict[str, int] = {}
        wanted: list[str] = []
        slicer = Slicer()
        for name in dict.fromkeys(names):
            await slicer.tick()
            if topic_name_error(name) is not None:
                codes[name] = ErrorCode.INVALID_TOPIC_EXCEPTION
                continue
            if image.topic(name) is not None:
                continue
            codes[name] = ErrorCode.LEADER_NOT_AVAILABLE
            if name not in self._in_flight:
                wanted.append(name)
        if not wanted:
            return codes
        # The bounds count the request as the controller reads it.
        latest = SUPPORTED_VERSIONS[ApiKey.CREATE_TOPICS][1]
        requests = (as_message(ApiKey.CREATE_TOPICS, latest,
                               {"topics": [self._topic_request(n)]}).topics[0] for n in wanted)
        if not fits_one_create_topics(requests, self._config.num_partitions):
            logger.warning("not auto-creating %d topic(s) (%s, ...): one CreateTopics of "
                           "them would exceed the controller's bounds on a request",
                           len(wanted), wanted[0])
            codes.update(dict.fromkeys(wanted, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            return codes
        topics = [self._topic_request(n) for n in wanted]
        self._in_flight.update(wanted)
        if self._nursery is not None:
            self._nursery.start_soon(self._create, wanted, topics)
        else:
            await self._create(wanted, topics)
        return codes

    def _topic_request(self, name: str) -> dict[str, Any]:
        config = self._config
        if name == CONSUMER_OFFSETS_TOPIC:
            # Never under-replicated: with fewer live brokers than
            # offsets.topic.replication.factor the controller refuses, as Kafka's does.
            return offsets_topic_settings(config).create_request()
        return {"name": name, "num_partitions": config.num_partitions,
                "replication_factor": config.default_replication_factor,
                "assignments": [], "configs": []}

    async def _create(self, names: list[str], topics: list[dict[str, Any]]) -> None:
        from broker.controller_client import ControllerUnavailableError

        body = {"topics": topics, "timeout_ms": CREATE_TIMEOUT_MS, "validate_only": False}
        try:
            response = await self._channel.send(ApiKey.CREATE_TOPICS, body, CREATE_TIMEOUT_MS)
        except ControllerUnavailableError as exc:
            logger.warning("cannot auto-create %s: %s", ", ".join(names), exc)
            return
        finally:
            self._in_flight.difference_update(names)
        for topic in response.get("topics") or ():
            code = topic.get("error_code", 0)
            if code in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                logger.info("auto-created topic %s", topic.get("name"))
            else:
                logger.warning("auto-creating topic %s failed with error %d: %s",
                               topic.get("name"), code, topic.get("error_message"))
