"""A JoinGroup or SyncGroup parked by the coordinator gets its answer when the group
produces it; each waiting request gets a copy of its own, since its handler and quota
enforcement write per-request fields (version adjustments, throttle time) into it."""

from __future__ import annotations

import trio
import trio.testing

from broker.group.coordinator import GroupCoordinator
from broker.group.model import Effects, GroupCoordinatorSettings, MembershipReply, Reply
from broker.group.responses import Outcome, join_body
from metadata.image import MetadataImage
from tests.unit.broker.txn.test_coordinator_runtime import BROKER, MemoryLog


async def test_each_parked_request_gets_its_own_copy_of_the_reply():
    coordinator = GroupCoordinator(BROKER, GroupCoordinatorSettings(num_partitions=1),
                                   MemoryLog(),  # type: ignore[arg-type]
                                   image=MetadataImage.empty)
    answers: list[MembershipReply] = []

    async def parked_join() -> None:
        answers.append(await coordinator.answer("g", "join", Outcome(parked="m-1"), Effects()))

    reply = join_body(0, "m-1", generation=1, protocol_name="range", leader="m-1")
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(parked_join)
            nursery.start_soon(parked_join)  # the same member's retried join
            await trio.testing.wait_all_tasks_blocked()
            # Any operation's effects deliver the reply to both waiting requests.
            await coordinator.answer("g", "join", Outcome(body=join_body(0)),
                                     Effects(replies=[Reply("g", "m-1", "join", reply)]))
    assert answers == [reply, reply]
    assert answers[0] is not answers[1] and all(a is not reply for a in answers)
    answers[0].throttle_time_ms = 100
    assert answers[1].throttle_time_ms == 0 and reply.throttle_time_ms == 0
