"""A coordinator's internal topic (`__consumer_offsets`, `__transaction_state`): its
settings, and its creation on first use (FindCoordinator), through the controller."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import trio

from clients.protocol import ApiKey, ErrorCode
from metadata.controller.assignments import usable_brokers
from metadata.image import MetadataImage

logger = logging.getLogger(__name__)

CREATE_TIMEOUT_MS = 30_000
# A reason the topic cannot be created is logged again after this long at the earliest.
REPEAT_LOG_S = 60.0

# Sends one CreateTopics topic entry to the controller; returns its error code and the
# controller's error message (None when it gave none).
CreateTopic = Callable[[dict[str, Any]], Awaitable[tuple[int, str | None]]]


@dataclass(frozen=True)
class InternalTopicSettings:
    """What a coordinator's compacted internal topic is created with, and the config key
    names that say so: `replication_factor_key` is named to the operator when too few
    brokers live, and `users` says who goes without a coordinator meanwhile."""

    topic: str
    num_partitions: int
    replication_factor: int
    # Topic configs in the CreateTopics request, as (name, value) pairs.
    configs: tuple[tuple[str, str], ...]
    replication_factor_key: str
    users: str

    def create_request(self) -> dict[str, Any]:
        """The CreateTopics entry."""
        return {"name": self.topic, "num_partitions": self.num_partitions,
                "replication_factor": self.replication_factor, "assignments": [],
                "configs": [{"name": name, "value": value} for name, value in self.configs]}


def channel_create_topic(channel: Any) -> CreateTopic:
    """A `CreateTopic` over `broker.controller_client.ControllerClient`."""
    async def create(topic: dict[str, Any]) -> tuple[int, str | None]:
        from broker.controller_client import ControllerUnavailableError

        body = {"topics": [topic], "timeout_ms": CREATE_TIMEOUT_MS, "validate_only": False}
        try:
            response = await channel.send(ApiKey.CREATE_TOPICS, body, CREATE_TIMEOUT_MS)
        except ControllerUnavailableError as exc:
            logger.warning("cannot create %s: %s", topic["name"], exc)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, str(exc)
        results = response.get("topics") or [{}]
        return (int(results[0].get("error_code", ErrorCode.UNKNOWN_SERVER_ERROR)),
                results[0].get("error_message"))

    return create


class InternalTopicCreator:
    """Creates the internal topic `settings.topic` in the background, once at a time, when
    enough brokers live."""

    def __init__(self, settings: InternalTopicSettings, create: CreateTopic | None) -> None:
        self.settings = settings
        self._create = create
        self._in_flight = False
        self._last_failure: str | None = None
        # (reason, when) of the last "too few brokers" log line: every FindCoordinator asks
        # again, so it is logged when it changes and then at most every REPEAT_LOG_S.
        self._too_few_logged: tuple[str, float] | None = None

    def _log_too_few_brokers(self, reason: str, wanted: int) -> None:
        now = time.monotonic()
        last = self._too_few_logged
        if last is not None and last[0] == reason and now - last[1] < REPEAT_LOG_S:
            return
        self._too_few_logged = (reason, now)
        logger.warning("%s: %s until %d brokers are live, or set %s to the number of "
                       "brokers (1 on a single node); expected while a cluster is starting "
                       "(repeated at most every %.0f s)", reason, self.settings.users, wanted,
                       self.settings.replication_factor_key, REPEAT_LOG_S)

    def ensure(self, image: MetadataImage, nursery: trio.Nursery | None) -> str | None:
        """Start creating the topic unless it exists or a creation is under way. Returns why
        the topic is not there yet when that is worth telling the client (too few live
        brokers, or the controller refused the last attempt), else None."""
        if (self._create is None or nursery is None
                or image.topic(self.settings.topic) is not None):
            return None
        # Counted as the controller counts the brokers it may place replicas on.
        live = len(usable_brokers(image))
        wanted = self.settings.replication_factor
        if live < wanted:
            # Kafka refuses too rather than create an under-replicated internal topic.
            reason = (f"{self.settings.topic} cannot be created: {live} live broker(s), "
                      f"{self.settings.replication_factor_key} is {wanted}")
            self._log_too_few_brokers(reason, wanted)
            return reason
        self._too_few_logged = None
        if not self._in_flight:
            self._in_flight = True
            nursery.start_soon(self._run)
        return self._last_failure

    async def _run(self) -> None:
        try:
            code, message = await self._create(  # type: ignore[misc]
                self.settings.create_request())
        finally:
            self._in_flight = False
        if code in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
            self._last_failure = None
            logger.info("created %s", self.settings.topic)
        else:
            error = ErrorCode.from_code(code)
            failure = (f"creating {self.settings.topic} failed: "
                       f"{error.name} ({int(error)}): {message or error.message}")
            # Clients retry FindCoordinator at once: say a failure once, not per attempt.
            logger.log(logging.DEBUG if failure == self._last_failure else logging.WARNING,
                       "%s", failure)
            self._last_failure = failure
