"""The consuming side of `scripts/bench --latency`, run as its own process:
`python -m scripts.benchmarks.latency_consumer BOOTSTRAP TOPIC`.

A confluent-kafka consumer reads partition 0 of TOPIC from its end. For each batch it takes
(the first message waited for, then whatever else has arrived) it writes one line to stdout: the monotonic clock (nanoseconds) when the
batch arrived and the clock readings that the batch's stamped records carry (values starting
with a digit; the others are filler). Reading the clock once per batch and writing only the
stamps keeps the measuring side's cost per record to a list comprehension in C-level calls,
where a kcat consumer writing every value to an unbuffered pipe made one write per record
(at 850,000 records/s, more CPU than the brokers it measured). The line is flushed at once,
so the parent reads it when it is written; CLOCK_MONOTONIC is one clock for every process
on the machine."""

from __future__ import annotations

import sys
import time

STAMP = 19  # digits of a nanosecond clock reading; a stamped value starts with them
_DIGITS = frozenset(b"0123456789")


def stamps_of(values: list[bytes | None]) -> list[bytes]:
    """The clock readings of the stamped values among `values`."""
    return [value[:STAMP] for value in values if value and value[0] in _DIGITS]


def main(bootstrap: str, topic: str) -> None:
    import confluent_kafka

    from scripts.benchmarks.native_load import CONSUMER_SETTINGS

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": "bench-latency",
        **CONSUMER_SETTINGS, "fetch.wait.max.ms": "500"})
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_END)])
    out = sys.stdout.buffer
    try:
        while True:
            # consume(n, timeout) waits for n messages or the timeout, whichever comes
            # first: the first message is waited for alone, then what else has arrived.
            first = consumer.poll(0.1)
            if first is None:
                continue
            arrived = time.perf_counter_ns()
            messages = [first, *consumer.consume(10_000, 0)]
            stamps = stamps_of([m.value() for m in messages if m.error() is None])
            if stamps:
                out.write(b"%d %s\n" % (arrived, b" ".join(stamps)))
                out.flush()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
    finally:
        consumer.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
