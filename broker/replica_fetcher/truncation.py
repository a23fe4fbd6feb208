"""Where a follower truncates when the leader reports a diverging epoch (KIP-101/KIP-595).

Kafka's AbstractFetcherThread.getOffsetTruncationState, fed by Fetch's `diverging_epoch`:
the leader says where its copy of epoch E ends; the follower looks up its own end of the
largest epoch <= E and cuts its log at the smaller of the two. When the follower does not
know E itself it cuts at the end of its own earlier epoch, and the next fetch (carrying that
epoch) narrows it further. Never the high watermark: committed records are kept.
"""

from __future__ import annotations

UNDEFINED_EPOCH_OFFSET = -1


def divergence_truncation_offset(local_epoch_end: tuple[int, int], leader_epoch: int,
                                 leader_end_offset: int, log_end_offset: int) -> int:
    """The offset to truncate to.

    `local_epoch_end` is the follower's own (epoch, end offset) for `leader_epoch`, as its
    leader epoch cache answers OffsetsForLeaderEpoch; `leader_epoch`/`leader_end_offset`
    are the leader's diverging epoch and where it ends on the leader.
    """
    local_epoch, local_end = local_epoch_end
    if local_end == UNDEFINED_EPOCH_OFFSET:
        # The follower has no epoch at or below the leader's: keep only what the leader has.
        return min(leader_end_offset, log_end_offset)
    if local_epoch != leader_epoch:
        return min(local_end, log_end_offset)
    return min(local_end, leader_end_offset, log_end_offset)
