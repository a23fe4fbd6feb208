"""A quorum member in its own process, driven line by line over stdin/stdout (crash tests).

Run: python -m tests.unit.kraft.quorum_node --node-id 1 --voters 1@127.0.0.1:P,... --log-dir DIR
Requests: `append <hex>[,<hex>...]`, `status`, `records`. Replies: one line each:
`ok <offset>`, `notleader <id>`, `error <text>`, `status <json>`, `records <json hex list>`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

import trio

from kraft import NotLeaderError, QuorumConfig, QuorumError, RaftQuorum, parse_voters
from tests.unit.kraft.support import FAST, ListStateMachine


def reply(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def serve(quorum: RaftQuorum, machine: ListStateMachine) -> None:
    stdin = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
    buffer = b""
    while True:
        chunk = await stdin.receive_some()
        if not chunk:
            return
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            verb, _, arg = line.decode().strip().partition(" ")
            if verb == "append":
                try:
                    offset = await quorum.append([bytes.fromhex(h) for h in arg.split(",")])
                    reply(f"ok {offset}")
                except NotLeaderError as exc:
                    reply(f"notleader {exc.leader_id}")
                except QuorumError as exc:
                    reply(f"error {exc}")
            elif verb == "status":
                status = quorum.status()
                reply("status " + json.dumps({"leader_id": status.leader_id, "is_ready": status.is_ready,
                                              "epoch": status.epoch, "applied": status.applied_offset}))
            elif verb == "records":
                reply("records " + json.dumps([r.hex() for r in machine.records()]))
            else:
                reply(f"error unknown request {verb!r}")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--node-id", type=int, required=True)
    parser.add_argument("--voters", required=True)
    parser.add_argument("--log-dir", type=Path, required=True)
    parser.add_argument("--snapshot-entries", type=int, default=5000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    machine = ListStateMachine()
    quorum = RaftQuorum(QuorumConfig(node_id=args.node_id, voters=parse_voters(args.voters),
                                     log_dir=args.log_dir, snapshot_interval_entries=args.snapshot_entries,
                                     **FAST), machine)  # type: ignore[arg-type]
    quorum.start()
    reply("ready")
    try:
        await serve(quorum, machine)
    finally:
        quorum.close()


if __name__ == "__main__":
    trio.run(main)
