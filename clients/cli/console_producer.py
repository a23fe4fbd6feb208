"""`raftka console-producer`: send stdin lines as records, like kafka-console-producer.sh.

Each line is one record (value only, or `key<key.separator>value` with
`--property parse.key=true`). Like Kafka's tool the producer lingers up to 1000 ms
(`linger.ms` can be overridden with `--producer-property`). At end of input it waits for
every acknowledgement and exits 0, or 1 if any record failed (failures go to stderr).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from clients.cli.admin_tool import add_command_config, command_config
from clients.cli.main import CommandError
from clients.cli.properties import parse_pairs

CLIENT_ID = "console-producer"
DEFAULT_LINGER_MS = 1000
_READ_CHUNK = 1 << 20


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "console-producer", help="send lines from stdin to a topic (like "
                                 "kafka-console-producer.sh)")
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="reader properties: parse.key, key.separator, ignore.error")
    parser.add_argument("--producer-property", action="append", default=[],
                        metavar="KEY=VALUE", help="a producer setting (repeatable)")
    add_command_config(parser, "--producer.config")
    parser.set_defaults(func=run)


class LineReader:
    """Turns stdin lines into (key, value) pairs per Kafka's LineMessageReader properties."""

    def __init__(self, properties: dict[str, str]) -> None:
        self.parse_key = properties.get("parse.key", "false").lower() == "true"
        self.key_separator = properties.get("key.separator", "\t").encode()
        self.ignore_error = properties.get("ignore.error", "false").lower() == "true"
        self.line_number = 0

    def record(self, line: bytes) -> tuple[bytes | None, bytes]:
        self.line_number += 1
        if not self.parse_key:
            return None, line
        key, sep, value = line.partition(self.key_separator)
        if not sep:
            if self.ignore_error:
                return None, line
            raise CommandError(f"No key separator found on line number {self.line_number}: "
                               f"'{_excerpt(line)}'")
        return key, value


def _excerpt(line: bytes, limit: int = 80) -> str:
    text = line[:limit].decode(errors="replace")
    return text if len(line) <= limit else f"{text}... ({len(line)} bytes)"


class LineSplitter:
    """Splits stdin's bytes into lines (without the newline, nor a carriage return before
    it) in time linear in the input: each chunk is scanned once, and the pieces of a line
    longer than a chunk are joined once, when its end arrives."""

    def __init__(self) -> None:
        self._pieces: list[bytes] = []  # the start of the line not yet ended

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines ``chunk`` ends."""
        if b"\n" not in chunk:
            if chunk:
                self._pieces.append(chunk)
            return []
        lines = chunk.split(b"\n")
        if self._pieces:
            self._pieces.append(lines[0])
            lines[0] = b"".join(self._pieces)
        rest = lines.pop()
        self._pieces = [rest] if rest else []
        return [line[:-1] if line.endswith(b"\r") else line for line in lines]

    def end(self) -> list[bytes]:
        """The last line, when the input does not end with a newline."""
        line, self._pieces = b"".join(self._pieces), []
        return [line] if line else []


async def _produce(args: argparse.Namespace, config: dict[str, Any],
                   reader: LineReader) -> int:
    from clients.producer import open_producer

    failures = 0
    stopping = False  # a fatal error ends the run: it is the one line, not each record's

    def report(error: BaseException) -> None:
        nonlocal failures
        failures += 1
        print(f"Error when sending message to topic {args.topic}: {error}", file=sys.stderr)

    def on_done(future: Any) -> None:
        error = future.exception()
        if error is not None and not stopping:
            report(error)

    async with open_producer(config) as producer:
        try:
            bad_line = await _send_lines(producer, args.topic, reader, report, on_done)
        except BaseException:
            stopping = True
            raise
        await producer.flush()
    if bad_line is not None:
        raise bad_line
    return 1 if failures else 0


async def _send_lines(producer: Any, topic: str, reader: LineReader,
                      report: Callable[[BaseException], None],
                      on_done: Callable[[Any], None]) -> CommandError | None:
    """Send each stdin line; returns the error of a line that could not be parsed (reading
    stops there, what was read before is still delivered)."""
    import trio

    from clients.protocol import ErrorCode, KafkaError

    stdin = trio.wrap_file(sys.stdin.buffer)
    splitter = LineSplitter()
    while True:
        chunk = await stdin.read1(_READ_CHUNK)
        lines = splitter.feed(chunk) if chunk else splitter.end()
        for line in lines:
            try:
                key, value = reader.record(line)
            except CommandError as exc:
                return exc
            try:
                future = await producer.send(topic, value, key=key)
            except KafkaError as exc:
                if exc.code != ErrorCode.MESSAGE_TOO_LARGE:
                    raise  # the topic is unusable (no metadata, invalid name): stop
                report(exc)  # only this record can never be sent; go on with the rest
                continue
            future.add_callback(on_done)
        if not chunk:
            return None


def run(args: argparse.Namespace) -> int:
    import trio

    config: dict[str, Any] = {"linger.ms": DEFAULT_LINGER_MS, "client.id": CLIENT_ID}
    config.update(command_config(args))
    config.update(parse_pairs(args.producer_property, "--producer-property"))
    config["bootstrap.servers"] = args.bootstrap_server
    reader = LineReader(parse_pairs(args.property, "--property"))
    return trio.run(_produce, args, config, reader)
