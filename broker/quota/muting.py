"""Muting a throttled connection (KIP-219): the response leaves at once with its
throttle_time_ms, and the connection's next request waits until the throttle has passed."""

from __future__ import annotations

from typing import Any, MutableMapping

import trio

THROTTLED_UNTIL = "quota.throttled_until"


def mute(scratch: MutableMapping[str, Any], throttle_ms: int) -> None:
    """Hold the connection's next request for `throttle_ms` from now."""
    until = trio.current_time() + throttle_ms / 1000
    if until > scratch.get(THROTTLED_UNTIL, 0.0):
        scratch[THROTTLED_UNTIL] = until


async def wait_until_unmuted(scratch: MutableMapping[str, Any]) -> None:
    """Return once the connection's throttle (if any) has passed."""
    until = scratch.get(THROTTLED_UNTIL)
    if until is not None:
        await trio.sleep_until(until)
        if scratch.get(THROTTLED_UNTIL) == until:
            del scratch[THROTTLED_UNTIL]
