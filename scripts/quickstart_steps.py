"""The Python steps of `scripts/quickstart`, one subcommand each:

    python -m scripts.quickstart_steps confluent BOOTSTRAP TOPIC RECORDS PARTITIONS
        RECORDS 100-byte records produced with confluent-kafka (acks=all, idempotent, lz4)
        and read back from every partition; prints a throughput line for each direction.
    python -m scripts.quickstart_steps lines COUNT
        COUNT lines of 100 bytes on stdout, the input of console-producer.
    python -m scripts.quickstart_steps rate LABEL COUNT START END BYTES_PER_RECORD
        The throughput line of COUNT records between the clock readings START and END.

A failed step prints one line and exits non-zero (the script's error trap takes over).
"""

from __future__ import annotations

import sys
import time

VALUE = b"x" * 100


def rate_line(label: str, count: int, seconds: float, size: int) -> str:
    seconds = max(seconds, 1e-9)
    return (f"  {label:<34} {count:>8} records in {seconds:6.2f} s: {count / seconds:>10,.0f} "
            f"rec/s, {count * size / seconds / 1e6:6.1f} MB/s")


def confluent_round_trip(bootstrap: str, topic: str, records: int, partitions: int) -> None:
    """Produce `records` records, then read them back from the beginning of every partition."""
    # Imported here: the `lines` and `rate` steps run in the timed part of the script and
    # should not pay for loading librdkafka.
    import confluent_kafka

    common = {"bootstrap.servers": bootstrap, "broker.address.family": "v4"}
    producer = confluent_kafka.Producer({**common, "acks": "all", "enable.idempotence": True,
                                         "linger.ms": 5, "compression.type": "lz4"})
    failures: list[object] = []

    def delivered(err: object, msg: object) -> None:
        if err is not None:
            failures.append(err)

    start = time.monotonic()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, VALUE, str(i).encode(), on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(60) != 0 or failures:
        sys.exit(f"produce failed: {failures[:3]} (unflushed after 60 s: {len(producer)})")
    produced = time.monotonic() - start

    consumer = confluent_kafka.Consumer({**common, "group.id": "quickstart",
                                         "enable.auto.commit": False})
    consumer.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                     for p in range(partitions)])
    start = time.monotonic()
    seen = 0
    deadline = start + 60
    while seen < records and time.monotonic() < deadline:
        for msg in consumer.consume(10_000, timeout=0.5):
            if msg.error() is not None:
                sys.exit(f"consume failed: {msg.error()}")
            if msg.value() != VALUE:
                sys.exit(f"unexpected value at {msg.partition()}/{msg.offset()}")
            seen += 1
    consumed = time.monotonic() - start
    consumer.close()
    if seen != records:
        sys.exit(f"consumed {seen} of {records} records within 60 s")
    for label, seconds in (("confluent-kafka produce", produced),
                           ("confluent-kafka consume", consumed)):
        print(rate_line(label, records, seconds, len(VALUE)))


# Each step's name and how many arguments it takes.
STEPS = {"confluent": 4, "lines": 1, "rate": 5}


def main(argv: list[str]) -> None:
    if not argv or argv[0] not in STEPS or len(argv) != STEPS[argv[0]] + 1:
        sys.exit("usage: python -m scripts.quickstart_steps confluent|lines|rate ARGS... "
                 "(see the module's docstring)")
    step, *args = argv
    try:
        if step == "confluent":
            bootstrap, topic, records, partitions = args
            confluent_round_trip(bootstrap, topic, int(records), int(partitions))
        elif step == "lines":
            sys.stdout.buffer.write((b"y" * 100 + b"\n") * int(args[0]))
        else:
            label, count, start, end, size = args
            print(rate_line(label, int(count), float(end) - float(start), int(size)))
    except ValueError as exc:  # a count or clock reading that is not a number
        sys.exit(f"quickstart_steps {step}: {exc}")


if __name__ == "__main__":
    main(sys.argv[1:])
