"""Which partitions of an internal topic (`__consumer_offsets`, `__transaction_state`) a
coordinator on this broker serves, and at which coordinator epoch."""

from __future__ import annotations

from metadata.image import MetadataImage


def led_partitions(image: MetadataImage, topic_name: str, broker_id: int,
                   caught_up: bool) -> dict[int, int]:
    """The partitions of `topic_name` that `broker_id` leads in `image`, each with its leader
    epoch (the coordinator epoch). None until the broker has caught up with the metadata
    log: the image replayed at start-up is the one the broker last saw, so after a crash it
    still names this broker leader at an epoch another broker has since superseded, and a
    coordinator loaded from it would act (markers, aborts, expiries) for a partition it
    no longer leads."""
    topic = image.topic(topic_name)
    if topic is None or not caught_up:
        return {}
    return {p: reg.leader_epoch for p, reg in topic.partitions.items()
            if reg.leader == broker_id}
