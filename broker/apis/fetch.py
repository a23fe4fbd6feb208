"""Fetch (v4-12): authorize, hand the partitions to the replica manager's `fetch_messages`,
and answer through the request's fetch session.

Fetch sessions (KIP-227) are granted to followers (`broker.replica.fetch_session`); consumers
are answered sessionless (session id 0 tells them to send full fetches), and an incremental
fetch naming no live session gets FETCH_SESSION_ID_NOT_FOUND. A follower needs CLUSTER_ACTION
(then it reads every topic), a consumer READ on each topic; a partition it may not read is
answered TOPIC_AUTHORIZATION_FAILED in its place. What a read returns, how a fetch waits for
data, and which replica serves it is the replica manager's (`broker.replica.fetch`).
"""

from __future__ import annotations

from typing import Any

from broker.apis.authorization import ALLOW_ALL, AclOperation, Authorization, ResourceType
from broker.apis.request import DecodedRequest, RequestContext, RequestRouter
from broker.replica.fetch import FetchParams, empty_entry, fetch_messages
from broker.replica.fetch_session import FetchSessionCache
from broker.replica.manager import ReplicaManager
from clients.protocol import ApiKey, ErrorCode
from clients.protocol.messages.fetch import FetchRequestData

INVALID_SESSION_ID = 0
# From this version a consumer's fetch carries client metadata (KIP-392).
_CLIENT_METADATA_VERSION = 11


class FetchHandler:
    """Handles Fetch from the local replicas."""

    def __init__(self, replicas: ReplicaManager, authz: Authorization = ALLOW_ALL,
                 sessions: FetchSessionCache | None = None) -> None:
        self._replicas = replicas
        self._authz = authz
        self._sessions = sessions or FetchSessionCache()

    def register(self, router: RequestRouter) -> None:
        router.register(ApiKey.FETCH, self.handle, fetch_error_body)

    def _readable(self, ctx: RequestContext, replica_id: int, names: set[str]) -> set[str]:
        """Topics the request may read: a follower needs CLUSTER_ACTION (then all), a
        consumer READ on each topic."""
        if replica_id >= 0:
            return names if self._authz.cluster(ctx, AclOperation.CLUSTER_ACTION) else set()
        return self._authz.allowed_names(ctx, AclOperation.READ, ResourceType.TOPIC, names)

    async def handle(self, request: DecodedRequest, ctx: RequestContext) -> dict:
        body: FetchRequestData = request.body
        replica_id = body.replica_id
        context = self._sessions.context(body, replica_id)
        if context.error_code != ErrorCode.NONE:
            return {"throttle_time_ms": 0, "error_code": context.error_code,
                    "session_id": INVALID_SESSION_ID, "responses": []}
        topics = context.topics
        names = {t.topic for t in topics}
        readable = self._readable(ctx, replica_id, names)
        rack_id = body.rack_id or None
        client_metadata = request.api_version >= _CLIENT_METADATA_VERSION
        params = FetchParams(
            replica_id, body.max_wait_ms, body.min_bytes, body.max_bytes, body.isolation_level,
            client_metadata=client_metadata, rack_id=rack_id,
            listener_name=ctx.listener_name if rack_id is not None else None)
        if len(readable) == len(names):
            responses = await fetch_messages(self._replicas, params, topics)
        else:
            read = iter(await fetch_messages(
                self._replicas, params, [t for t in topics if t.topic in readable]))
            responses = [next(read) if t.topic in readable else _refused(t, params)
                         for t in topics]
        if context.session is not None:
            responses = context.session.answer(responses, context.incremental)
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
                "session_id": context.session_id, "responses": responses}


def _refused(topic: FetchRequestData.FetchTopic, params: FetchParams) -> dict[str, Any]:
    """A topic the request may not read: TOPIC_AUTHORIZATION_FAILED for each partition."""
    return {"topic": topic.topic, "partitions": [
        {**empty_entry(p.partition, params.isolation_level),
         "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
        for p in topic.partitions]}


def fetch_error_body(body: FetchRequestData, version: int, error_code: int,
                     message: str | None = None) -> dict:
    """The top-level error with every requested partition carrying it too."""
    return {"throttle_time_ms": 0, "error_code": error_code, "session_id": INVALID_SESSION_ID,
            "responses": [{"topic": t.topic, "partitions": [
                {**empty_entry(p.partition, 0), "error_code": error_code}
                for p in t.partitions]} for t in body.topics]}
