"""A tiny in-memory controller loop for tests: decide, commit (replay), repeat."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from clients.protocol import SUPPORTED_VERSIONS, ApiKey, as_message
from clients.protocol.messages.broker_heartbeat import BrokerHeartbeatResponseData
from clients.protocol.messages.broker_registration import BrokerRegistrationResponseData
from metadata.controller.brokers import broker_heartbeat, register_broker
from metadata.controller.topics import create_topics
from metadata.delta import MetadataDelta, apply_records
from metadata.heartbeats import BrokerHeartbeatTracker
from metadata.image import MetadataImage
from metadata.records import MetadataRecord
from metadata.settings import ControllerSettings


def typed(api_key: ApiKey, body: dict[str, Any], version: int | None = None) -> Any:
    """A request body spelled as a dict, as the controller reads it (its message class, at
    `version` or the latest supported)."""
    if version is None:
        version = SUPPORTED_VERSIONS[api_key][1]
    return as_message(api_key, version, body)


@dataclass
class Cluster:
    settings: ControllerSettings = field(default_factory=ControllerSettings)
    image: MetadataImage = field(default_factory=MetadataImage)
    tracker: BrokerHeartbeatTracker = field(default_factory=BrokerHeartbeatTracker)
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    now_ms: int = 1_000_000
    last_delta: MetadataDelta | None = None

    def commit(self, records: list[MetadataRecord]) -> MetadataImage:
        if records:
            delta, self.image = apply_records(self.image, records)
            self.tracker.on_metadata_update(delta, self.image)
            self.last_delta = delta
        return self.image

    def decide(self, result: tuple[list[MetadataRecord], Any]) -> Any:
        records, response = result
        self.commit(records)
        return response

    def register(self, broker_id: int, rack: str | None = None, incarnation: uuid.UUID | None = None) -> BrokerRegistrationResponseData:
        request = {
            "broker_id": broker_id,
            "cluster_id": self.settings.cluster_id or "",
            "incarnation_id": incarnation or uuid.UUID(int=broker_id + 1000, version=4),
            "listeners": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9092 + broker_id, "security_protocol": 0}],
            "features": [],
            "rack": rack,
        }
        body = as_message(ApiKey.BROKER_REGISTRATION, 4, request)
        return self.decide(register_broker(self.image, body, self.now_ms, self.tracker, self.settings))

    def heartbeat(self, broker_id: int, *, offset: int | None = None,
                  offline_log_dirs: tuple[uuid.UUID, ...] = (), **flags: bool) -> BrokerHeartbeatResponseData:
        reg = self.image.broker(broker_id)
        request = {
            "broker_id": broker_id,
            "broker_epoch": reg.epoch if reg else -1,
            "current_metadata_offset": self.image.offset if offset is None else offset,
            "want_fence": flags.get("want_fence", False),
            "want_shut_down": flags.get("want_shut_down", False),
            "offline_log_dirs": list(offline_log_dirs),
        }
        body = as_message(ApiKey.BROKER_HEARTBEAT, 1, request)
        return self.decide(broker_heartbeat(self.image, body, self.now_ms, self.tracker, self.settings))

    def add_brokers(self, *ids: int, racks: dict[int, str] | None = None) -> None:
        for b in ids:
            assert self.register(b, rack=(racks or {}).get(b)).error_code == 0
            assert self.heartbeat(b).is_fenced is False

    def create_topic(self, name: str, partitions: int = 1, rf: int = 1, **extra: Any) -> Any:
        """Create one topic; its CreatableTopicResult."""
        topic = {"name": name, "num_partitions": partitions, "replication_factor": rf, "assignments": [], "configs": []}
        topic.update(extra)
        request = typed(ApiKey.CREATE_TOPICS, {"topics": [topic], "timeout_ms": 1000, "validate_only": False})
        response = self.decide(create_topics(self.image, request, self.now_ms, rng=self.rng, settings=self.settings))
        return response.topics[0]
