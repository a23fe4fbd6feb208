"""Consumer groups for Raftka's consumer (Kafka's classic protocol, eager or cooperative
rebalancing, and the consumer group protocol).

``protocol``: the subscription and assignment bytes; ``assignors``: range, roundrobin,
sticky and cooperative-sticky (the sticky algorithm itself in ``sticky``);
``offsets``: OffsetCommit/OffsetFetch bodies; ``membership``: the I/O-free member state
machine, with its vocabulary and request bodies in ``actions`` and the leader's
assignment in ``leader``; ``trio_group``: the trio driver with its heartbeat task.

The consumer group protocol of KIP-848 (``group.protocol=consumer``): ``consumer_member``,
the I/O-free member the same driver runs, over ``member_assignment`` (what it owns and its
reconciliation towards the coordinator's target) and ``reconcile`` (the decisions and the
heartbeat's fields).
"""

from clients.consumer.group.assignors import (
    ASSIGNORS,
    CooperativeStickyAssignor,
    MemberSubscription,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    assignor_names,
    make_assignors,
)
from clients.consumer.group.membership import GroupMembership, GroupSettings, ClassicMemberState
from clients.consumer.group.offsets import CommitFailedError
from clients.consumer.group.protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

__all__ = [
    "ASSIGNORS", "Assignment", "CooperativeStickyAssignor", "CommitFailedError", "GroupMembership", "GroupSettings",
    "ClassicMemberState", "MemberSubscription", "RangeAssignor", "RoundRobinAssignor",
    "StickyAssignor", "Subscription", "assignor_names", "decode_assignment", "decode_subscription",
    "encode_assignment", "encode_subscription", "make_assignors",
]
