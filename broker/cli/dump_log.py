"""`raftka dump-log`: print and check segment and index files, like Kafka's DumpLogSegments."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "dump-log", help="print the batches of .log files and check .index/.timeindex files"
    )
    parser.add_argument("--files", required=True,
                        help="comma-separated .log, .index, .timeindex or .txnindex files")
    parser.add_argument("--print-data", action="store_true", help="print every record too")
    parser.add_argument("--verify", action="store_true",
                        help="check a .log file's index entries against it")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from clients.cli.main import CommandError

    files = [Path(f) for f in args.files.split(",") if f]
    for path in files:
        if not path.is_file():
            raise CommandError(f"file {path} does not exist")
    mismatches = 0
    for path in files:
        print(f"Dumping {path}")
        if path.suffix == ".log":
            mismatches += _dump_log(path, args.print_data)
            if args.verify:
                mismatches += _verify_indexes(path)
        elif path.suffix in (".index", ".timeindex"):
            mismatches += _verify_index(path)
        elif path.suffix == ".txnindex":
            mismatches += _dump_txn_index(path)
        else:
            raise CommandError(f"{path}: not a .log, .index, .timeindex or .txnindex file")
    return 1 if mismatches else 0


def _format_bytes(data: bytes | None) -> str:
    if data is None:
        return "null"
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.hex()


def _timestamp_type(header: object) -> str:
    return "LogAppendTime" if header.is_log_append_time else "CreateTime"  # type: ignore[attr-defined]


def _dump_log(path: Path, print_data: bool) -> int:
    from clients.records.batch import decode_batch
    from clients.records.compression import CODEC_NAMES
    from clients.records.errors import RecordsError
    from clients.records.header import crc_is_valid, parse_header

    data = path.read_bytes()
    position = 0
    problems = 0
    while position < len(data):
        try:
            header = parse_header(data, position)
        except RecordsError as exc:
            print(f"Corrupt data at position {position}: {exc}")
            return problems + 1
        if position + header.size > len(data):
            print(f"Found {len(data) - position} invalid bytes at the end of {path.name} (torn batch)")
            return problems + 1
        valid = crc_is_valid(data, position, header)
        problems += 0 if valid else 1
        print(
            f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} "
            f"count: {header.records_count} baseSequence: {header.base_sequence} "
            f"lastSequence: {header.last_sequence} producerId: {header.producer_id} "
            f"producerEpoch: {header.producer_epoch} partitionLeaderEpoch: {header.partition_leader_epoch} "
            f"isTransactional: {str(header.is_transactional).lower()} "
            f"isControl: {str(header.is_control).lower()} position: {position} "
            f"{_timestamp_type(header)}: {header.max_timestamp} size: {header.size} "
            f"magic: {header.magic} compresscodec: {CODEC_NAMES.get(header.compression, header.compression)} "
            f"crc: {header.crc} isvalid: {str(valid).lower()}"
        )
        if print_data and valid:
            try:
                batch = decode_batch(data, position)
            except RecordsError as exc:
                print(f"| cannot decode records: {exc}")
            else:
                for record in batch.records:
                    headers = ",".join(f"{k}:{_format_bytes(v)}" for k, v in record.headers)
                    print(
                        f"| offset: {record.offset} {_timestamp_type(header)}: {record.timestamp} "
                        f"keySize: {-1 if record.key is None else len(record.key)} "
                        f"valueSize: {-1 if record.value is None else len(record.value)} "
                        f"headerKeys: [{headers}] key: {_format_bytes(record.key)} "
                        f"payload: {_format_bytes(record.value)}"
                    )
        position += header.size
    return problems


def _dump_txn_index(path: Path) -> int:
    """Print an aborted-transaction index's entries, as DumpLogSegments does."""
    from broker.log.errors import KafkaStorageError
    from broker.log.txn_index import ENTRY_SIZE, decode_entries

    data = path.read_bytes()
    try:
        entries = decode_entries(data)
    except KafkaStorageError as exc:
        print(f"Corrupt transaction index: {exc}")
        return 1
    for txn in entries:
        print(f"version: 0 producerId: {txn.producer_id} firstOffset: {txn.first_offset} "
              f"lastOffset: {txn.last_offset} lastStableOffset: {txn.last_stable_offset}")
    if len(data) % ENTRY_SIZE:
        print(f"Found {len(data) % ENTRY_SIZE} invalid bytes at the end of {path.name}")
        return 1
    return 0


def _read_headers(log_path: Path) -> list[tuple[int, object]]:
    from clients.records.errors import RecordsError
    from clients.records.header import parse_header

    data = log_path.read_bytes()
    headers: list[tuple[int, object]] = []
    position = 0
    while position < len(data):
        try:
            header = parse_header(data, position)
        except RecordsError:
            break
        headers.append((position, header))
        position += header.size
    return headers


def _verify_indexes(log_path: Path) -> int:
    problems = 0
    for suffix in (".index", ".timeindex"):
        index_path = log_path.with_suffix(suffix)
        if index_path.exists():
            print(f"Verifying {index_path}")
            problems += _verify_index(index_path)
        else:
            print(f"{index_path} is missing")
            problems += 1
    return problems


def _verify_index(index_path: Path) -> int:
    import struct

    from clients.cli.main import CommandError

    log_path = index_path.with_suffix(".log")
    if not log_path.is_file():
        raise CommandError(f"log file {log_path} for {index_path} does not exist")
    base = int(index_path.stem)
    by_position = {pos: h for pos, h in _read_headers(log_path)}
    by_offset = sorted((h.last_offset, h) for h in by_position.values())  # type: ignore[attr-defined]
    raw = index_path.read_bytes()
    problems = 0
    if index_path.suffix == ".index":
        for n in range(len(raw) // 8):
            relative, position = struct.unpack_from(">ii", raw, n * 8)
            if relative == 0 and position == 0:
                break  # preallocated, unused space
            offset = base + relative
            header = by_position.get(position)
            print(f"offset: {offset} position: {position}")
            if header is None or header.last_offset != offset:  # type: ignore[attr-defined]
                found = "no batch" if header is None else f"last offset {header.last_offset}"  # type: ignore[attr-defined]
                print(f"Index offset mismatch in {index_path.name}: entry ({offset}, {position}), log has {found}")
                problems += 1
    else:
        max_so_far = -1
        ts_by_last_offset: dict[int, int] = {}
        for last_offset, header in by_offset:
            max_so_far = max(max_so_far, header.max_timestamp)  # type: ignore[attr-defined]
            ts_by_last_offset[last_offset] = header.max_timestamp  # type: ignore[attr-defined]
        for n in range(len(raw) // 12):
            timestamp, relative = struct.unpack_from(">qi", raw, n * 12)
            if timestamp == 0 and relative == 0:
                break
            offset = base + relative
            print(f"timestamp: {timestamp} offset: {offset}")
            if ts_by_last_offset.get(offset) != timestamp:
                print(f"Time index mismatch in {index_path.name}: entry ({timestamp}, {offset}) "
                      f"has no batch ending at {offset} with that max timestamp")
                problems += 1
    if problems:
        print(f"{problems} mismatch(es) in {index_path.name}")
    return problems
