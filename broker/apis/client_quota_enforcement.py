"""Client quota enforcement on a broker's client listeners (Kafka's KafkaApis quota checks,
KIP-219): wraps the Produce and Fetch handlers for the byte-rate quotas and every other
client API for the request-time quota.

A request over its quota is answered at once with `throttle_time_ms`, then its connection is
muted for that long (the next request waits). Produce counts the bytes of the request's
record batches; Fetch counts the bytes it returns and, when throttled, returns no data (the
bytes are taken back from the window), as Kafka does; a consumer's fetch size is capped to
what its quota allows in one window. Followers' fetches and broker-to-broker
APIs are exempt. Accounting is per request, never per record.
"""

from __future__ import annotations

from typing import Any

from broker.apis.request import DecodedRequest, Handler, RequestContext, RequestRouter
from broker.quota.manager import ClientQuotas
from broker.quota.muting import mute
from broker.quota.task_time import TaskTimeMeter
from clients.protocol import ApiKey
from clients.protocol.message import Message
from clients.protocol.primitives import value_size

# Not subject to the request-time quota: connection set-up and what brokers send each other.
_EXEMPT = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE,
                     ApiKey.WRITE_TXN_MARKERS})


def produce_bytes(body: dict[str, Any]) -> int:
    """Bytes of record batches in a Produce request."""
    return sum(value_size(p.get("records") or b"")
               for t in body.get("topic_data") or () for p in t.get("partition_data") or ())


def fetch_bytes(body: dict[str, Any]) -> int:
    """Bytes of record batches in a Fetch response."""
    return sum(value_size(p.get("records") or b"")
               for t in body.get("responses") or () for p in t.get("partitions") or ())


class ClientQuotaEnforcement:
    """Wraps the router's handlers with quota accounting (call after every API is
    registered)."""

    def __init__(self, quotas: ClientQuotas) -> None:
        self._quotas = quotas
        self._meter = TaskTimeMeter()

    def install(self, router: RequestRouter) -> None:
        for api_key in router.api_keys():
            if api_key == ApiKey.PRODUCE:
                router.wrap(api_key, self._produce)
            elif api_key == ApiKey.FETCH:
                router.wrap(api_key, self._fetch)
            elif api_key not in _EXEMPT:
                router.wrap(api_key, self._other)

    async def _timed(self, inner: Handler, request: DecodedRequest, ctx: RequestContext
                     ) -> tuple[dict | None, int]:
        """The handler's answer and the request-time throttle of its client."""
        if self._quotas.request.quota(ctx.principal, ctx.client_id) is None:
            if self._meter.installed and not self._quotas.request.any_quota():
                self._meter.uninstall()
            return await inner(request, ctx), 0
        self._meter.install()
        task = self._meter.start()
        try:
            body = await inner(request, ctx)
        finally:
            seconds = self._meter.stop(task)
        # Kafka records thread time as a percentage of one second.
        return body, self._quotas.request.record(ctx.principal, ctx.client_id, seconds * 100)

    def _produce(self, inner: Handler) -> Handler:
        async def handle(request: DecodedRequest, ctx: RequestContext) -> dict | None:
            # Counted first: a request that waits for replicas lets go of its records.
            size = produce_bytes(request.body)
            body, request_throttle = await self._timed(inner, request, ctx)
            if int(request.body.get("acks", 1)) == 0:
                request_throttle = 0
            throttle = max(request_throttle, self._quotas.produce.record(
                ctx.principal, ctx.client_id, size))
            if throttle > 0:
                mute(ctx.scratch, throttle)
                if body is not None:
                    body["throttle_time_ms"] = throttle
            return body
        return handle

    def _fetch(self, inner: Handler) -> Handler:
        async def handle(request: DecodedRequest, ctx: RequestContext) -> dict | None:
            body = request.body
            if int(body.get("replica_id", -1)) >= 0:
                return await inner(request, ctx)
            cap = self._quotas.fetch.max_value_in_window(ctx.principal, ctx.client_id)
            if cap is not None and int(body.get("max_bytes", 0)) > cap:
                # No response bigger than the quota allows in one window (Kafka's cap).
                body["max_bytes"] = max(int(cap), 1)
                body["min_bytes"] = min(int(body.get("min_bytes", 0)), body["max_bytes"])
            body, request_throttle = await self._timed(inner, request, ctx)
            if body is None or body.get("error_code"):
                return body
            size = fetch_bytes(body)
            throttle = max(request_throttle, self._quotas.fetch.record(
                ctx.principal, ctx.client_id, size))
            if throttle <= 0:
                return body
            self._quotas.fetch.unrecord(ctx.principal, ctx.client_id, size)
            mute(ctx.scratch, throttle)
            return {**body, "throttle_time_ms": throttle, "responses": []}
        return handle

    def _other(self, inner: Handler) -> Handler:
        async def handle(request: DecodedRequest, ctx: RequestContext) -> dict | None:
            body, throttle = await self._timed(inner, request, ctx)
            if throttle > 0:
                mute(ctx.scratch, throttle)
                if isinstance(body, Message):
                    if "throttle_time_ms" in body.__slots__:
                        body.throttle_time_ms = throttle
                elif body is not None and "throttle_time_ms" in body:
                    body["throttle_time_ms"] = throttle
            return body
        return handle
