"""The LogManager: every partition log on this broker across its ``log.dirs``.

It locks each directory, loads (and after an unclean stop, recovers) the logs found there,
creates and deletes logs as metadata changes, and offers the periodic jobs for the broker's
trio tasks: retention, compaction (a trio task itself, so it can yield), time-based flush
and checkpointing.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import uuid
from pathlib import Path
from types import MappingProxyType
from typing import Mapping, Sequence

import trio

from broker.log import cleaner
from broker.log.cleaner import DEFAULT_MAP_CAPACITY, clean_log_steps
from broker.log.config import LogConfig
from broker.log.dir_failures import LogDirFailures
from broker.log.errors import KafkaStorageError, LogDirLockedError
from broker.log.log_dir import LogDir
from broker.log.partition_log import PartitionLog, partition_dir_name
from broker.open_files import descriptors_in_use, log_descriptor_ceiling
from broker.stats.histogram import Histogram
from clients.clock import wall_clock_ms
from metadata.topic_names import METADATA_DIR_NAME

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
_DELETE_SUFFIX = "-delete"
# Errors of the process's limits (open files), not of the directory's device.
_PROCESS_LIMITS = frozenset({errno.EMFILE, errno.ENFILE})


def parse_partition_dir(name: str) -> TopicPartition | None:
    """(topic, partition) from a ``<topic>-<partition>`` directory name, else None.

    The quorum's own directory (``__cluster_metadata-0``) may sit in a log dir, as in Kafka, and
    is never a partition of this manager's.
    """
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit() or name.startswith(".") or name == METADATA_DIR_NAME:
        return None
    return topic, int(partition)


class LogManager:
    """Owns the PartitionLogs of all ``log_dirs``; ``broker_defaults`` are broker configs
    (``log.retention.hours``, ``log.segment.bytes``, ...) that supply topic defaults.

    Topic overrides live in metadata, not on disk, so a log loaded at startup runs with the
    broker defaults until its topic's config is applied (:meth:`get_or_create_log` with a
    ``config``, or :meth:`update_topic_config`). Until then retention and the cleaner leave
    it alone: the defaults could say ``cleanup.policy=delete`` for a compacted topic.
    """

    def __init__(
        self,
        log_dirs: Sequence[str | os.PathLike[str]],
        broker_defaults: Mapping[str, str] = MappingProxyType({}),
        *,
        now_ms: int | None = None,
    ) -> None:
        if not log_dirs:
            raise ValueError("at least one log directory is required")
        self.broker_defaults = dict(broker_defaults)
        self.failures = LogDirFailures()
        # Every log's flush durations, in milliseconds (Kafka's LogFlushRateAndTimeMs).
        self.flush_time_ms = Histogram()
        self._dirs: list[LogDir] = []
        try:
            for path in log_dirs:
                self._dirs.append(LogDir(path))
        except LogDirLockedError:
            self._release_dirs()
            raise
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._dir_of: dict[TopicPartition, LogDir] = {}
        # The topic overrides applied to each log; a log loaded at startup has no entry
        # until metadata supplies its topic's config.
        self._overrides: dict[TopicPartition, dict[str, str]] = {}
        now_ms = wall_clock_ms() if now_ms is None else now_ms
        for log_dir in self._dirs:
            self._load_dir(log_dir, now_ms)

    def _release_dirs(self) -> None:
        for log_dir in self._dirs:
            log_dir.release()

    def _config(self, overrides: Mapping[str, str]) -> LogConfig:
        return LogConfig.from_overrides(overrides, self.broker_defaults)

    def _load_dir(self, log_dir: LogDir, now_ms: int) -> None:
        children = sorted(log_dir.path.iterdir())
        # A new dir holds only the lock and meta.properties: nothing to recover, nothing to warn about.
        if not log_dir.had_clean_shutdown and any(c.is_dir() and parse_partition_dir(c.name) for c in children):
            logger.warning("%s was not shut down cleanly; recovering its logs", log_dir.path)
        for child in children:
            if not child.is_dir():
                continue
            if child.name.endswith(_DELETE_SUFFIX):
                shutil.rmtree(child, ignore_errors=True)
                continue
            key = parse_partition_dir(child.name)
            if key is None:
                continue
            if key in self._logs:
                raise KafkaStorageError(f"partition {key[0]}-{key[1]} found in both {self._dir_of[key].path} and {log_dir.path}")
            self._logs[key] = PartitionLog(
                child, key[0], key[1], self._config({}),
                recovery_point=log_dir.recovery_points.get(key, 0),
                log_start_offset=log_dir.log_start_offsets.get(key, 0),
                high_watermark=log_dir.high_watermarks.get(key, 0),
                clean_shutdown=log_dir.had_clean_shutdown,
                now_ms=now_ms,
            )
            self._logs[key].flush_time_ms = self.flush_time_ms
            self._logs[key].first_dirty_offset = max(
                self._logs[key].log_start_offset, log_dir.cleaner_offsets.get(key, 0)
            )
            self._dir_of[key] = log_dir
            self._watch(self._logs[key], log_dir)
        logger.info("loaded %d logs from %s", sum(1 for d in self._dir_of.values() if d is log_dir), log_dir.path)

    @property
    def log_dirs(self) -> list[Path]:
        return [d.path for d in self._dirs]

    @property
    def online_dirs(self) -> list[Path]:
        return [d.path for d in self._dirs if not self.failures.is_offline(d.path)]

    def _watch(self, log: PartitionLog, log_dir: LogDir) -> None:
        """One log's I/O failure takes its whole directory offline, as in Kafka: the
        device or file system under it is what failed."""
        log.on_storage_error = lambda exc: self.mark_dir_offline(log_dir.path, str(exc))

    def mark_dir_offline(self, path: Path, reason: str) -> None:
        """Take every log in `path` offline (reads and writes answer KAFKA_STORAGE_ERROR)
        and tell the failure listeners."""
        for key, log_dir in self._dir_of.items():
            if log_dir.path == path:
                self._logs[key].offline = True
        self.failures.mark_offline(path, reason)

    # -- partition logs ------------------------------------------------------------------

    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def log_dir_of(self, topic: str, partition: int) -> Path | None:
        """The log directory holding the partition's log (None when it has none)."""
        log_dir = self._dir_of.get((topic, partition))
        return None if log_dir is None else log_dir.path

    def config_applied(self, topic: str, partition: int) -> bool:
        """Whether the log runs with its topic's config (False for a log loaded at startup
        that metadata has not configured yet; retention and cleaning skip those)."""
        key = (topic, partition)
        return key in self._logs and key in self._overrides

    def get_or_create_log(
        self,
        topic: str,
        partition: int,
        topic_id: uuid.UUID | None = None,
        config: Mapping[str, str] | None = None,
        *,
        now_ms: int | None = None,
    ) -> PartitionLog:
        """The partition's log, created in the least-loaded directory if absent.

        ``config`` holds the topic's raw overrides (as in ConfigRecords); when given it
        replaces the overrides of an existing log.
        """
        key = (topic, partition)
        log = self._logs.get(key)
        if log is not None:
            if config is not None:
                self._overrides[key] = dict(config)
                log.update_config(self._config(config))
            if topic_id is not None and log.topic_id != topic_id:
                log.topic_id = log._check_topic_id(topic_id)
            return log
        overrides = dict(config or {})
        online = [d for d in self._dirs if not self.failures.is_offline(d.path)]
        if not online:
            raise KafkaStorageError(f"cannot create {topic}-{partition}: every log directory "
                                    f"is offline")
        log_dir = min(online, key=lambda d: sum(1 for x in self._dir_of.values() if x is d))
        ceiling = log_descriptor_ceiling()
        if ceiling is not None and (in_use := descriptors_in_use()) >= ceiling:
            raise KafkaStorageError(
                f"cannot create {topic}-{partition}: the node holds {in_use} open files and "
                f"keeps the rest of its open-files limit for connections (raise the limit: "
                f"ulimit -n)")
        try:
            log = PartitionLog(log_dir.path / partition_dir_name(topic, partition), topic,
                               partition, self._config(overrides), topic_id=topic_id,
                               now_ms=now_ms)
        except OSError as exc:
            # Out of descriptors is the process's limit, not the disk failing: the other
            # logs of the directory stay online, and only this partition is refused.
            if exc.errno not in _PROCESS_LIMITS:
                self.mark_dir_offline(log_dir.path, str(exc))
            raise KafkaStorageError(f"cannot create {topic}-{partition} in {log_dir.path}: "
                                    f"{exc}") from exc
        log.flush_time_ms = self.flush_time_ms
        self._watch(log, log_dir)
        self._logs[key] = log
        self._dir_of[key] = log_dir
        self._overrides[key] = overrides
        logger.info("created log for %s-%d in %s", topic, partition, log_dir.path)
        return log

    def set_broker_defaults(self, defaults: Mapping[str, str]) -> None:
        """New broker-level topic defaults (a dynamic broker config changed): each log whose
        topic config is known takes them at once, under its topic's overrides (Kafka's
        DynamicLogConfig); a log still waiting for its topic config gets them with it."""
        self.broker_defaults = dict(defaults)
        configs: dict[tuple[tuple[str, str], ...], LogConfig] = {}
        for key, overrides in self._overrides.items():
            log = self._logs.get(key)
            if log is None:
                continue
            shared = tuple(sorted(overrides.items()))
            config = configs.get(shared)
            if config is None:
                try:
                    config = configs[shared] = self._config(overrides)
                except ValueError:
                    logger.exception("cannot apply the broker log defaults to %s-%d", *key)
                    continue
            log.update_config(config)

    def update_topic_config(self, topic: str, overrides: Mapping[str, str]) -> None:
        """Apply a topic's new raw overrides to all of its partitions here."""
        config = self._config(overrides)
        for (t, p), log in self._logs.items():
            if t == topic:
                self._overrides[(t, p)] = dict(overrides)
                log.update_config(config)

    def delete_log(self, topic: str, partition: int) -> bool:
        """Close the log and remove its directory; returns whether it existed."""
        key = (topic, partition)
        log = self._logs.pop(key, None)
        if log is None:
            return False
        self._dir_of.pop(key)
        self._overrides.pop(key, None)
        log.close_and_remove_files()
        # Renamed first so a crash mid-delete leaves a dir the next start removes.
        doomed = log.directory.with_name(f"{log.directory.name}.{uuid.uuid4().hex}{_DELETE_SUFFIX}")
        os.replace(log.directory, doomed)
        shutil.rmtree(doomed, ignore_errors=True)
        logger.info("deleted log %s-%d", topic, partition)
        return True

    def logs(self) -> list[PartitionLog]:
        """The logs in online directories (the periodic jobs and shutdown work on these)."""
        return [log for log in self._logs.values() if not log.offline]

    def _configured_logs(self) -> list[PartitionLog]:
        return [log for key, log in self._logs.items()
                if key in self._overrides and not log.offline]

    # -- periodic jobs -------------------------------------------------------------------

    def run_retention(self, now_ms: int) -> int:
        """Delete segments past retention and files past their delete delay; returns segments deleted.

        Logs whose topic config has not been applied yet are skipped (see the class doc).
        """
        deleted = 0
        for log in self.logs():
            if (log.topic, log.partition) in self._overrides:
                deleted += log.delete_old_segments(now_ms)
            log.delete_pending_files(now_ms)
        return deleted

    async def run_cleaner(self, now_ms: int, map_capacity: int = DEFAULT_MAP_CAPACITY,
                          io_max_bytes_per_second: float = float("inf")) -> int:
        """Compact every compacted log that is due; returns how many logs were cleaned.

        A pass maps at most ``map_capacity`` keys (log.cleaner.dedupe.buffer.size) and reads
        at most ``io_max_bytes_per_second`` (log.cleaner.io.max.bytes.per.second), counted per
        step.

        Other tasks run between logs and every `cleaner.STEP_BYTES` of a pass, so a long pass
        does not stall produce and fetch; a pass whose log changed under it (retention,
        truncation, deletion) is dropped. Logs whose topic config has not been applied yet
        are skipped (see the class doc).
        """
        cleaned = 0
        started, read = trio.current_time(), 0
        for log in self._configured_logs():
            await trio.lowlevel.checkpoint()
            if log.closed or not log.config.compact:
                continue  # deleted or reconfigured while an earlier log was being cleaned
            steps = clean_log_steps(log, now_ms, map_capacity=map_capacity)
            try:
                while True:
                    try:
                        next(steps)
                    except StopIteration as done:
                        if done.value is not None:
                            cleaned += 1
                        break
                    read += cleaner.STEP_BYTES
                    # Kafka's cleaner Throttler: sleep off any lead over the allowed rate.
                    lead = started + read / io_max_bytes_per_second - trio.current_time()
                    if lead > 0:
                        await trio.sleep(lead)
                    else:
                        await trio.lowlevel.checkpoint()
            finally:
                steps.close()  # on cancellation: drop the unfinished .cleaned segment
        return cleaned

    def flush_due(self, now_ms: int) -> int:
        """fsync logs whose flush.ms has passed; returns how many were flushed."""
        return sum(1 for log in self.logs() if log.flush_if_due(now_ms))

    def sync_for_exit(self) -> None:
        """fsync every log's active segment and change nothing else: the flush of a process
        ending abruptly (`broker.forced_exit`), which may interrupt any code."""
        for log in list(self._logs.values()):
            try:
                os.fsync(log.segments[-1].fd)
            except (OSError, IndexError, ValueError):
                pass

    def checkpoint(self) -> None:
        """Write recovery-point, HW, log-start-offset and cleaner checkpoints of every dir."""
        for log_dir, marks in self._checkpoint_marks():
            try:
                log_dir.write_checkpoints(*marks)
            except OSError as exc:
                self.mark_dir_offline(log_dir.path, f"checkpoint failed: {exc}")

    async def checkpoint_off_loop(self) -> None:
        """`checkpoint` with the file writes and fsyncs in a worker thread: the marks are
        taken on the event loop, and a slow disk does not hold up requests meanwhile."""
        for log_dir, marks in self._checkpoint_marks():
            try:
                await trio.to_thread.run_sync(log_dir.write_checkpoints, *marks)
            except OSError as exc:
                self.mark_dir_offline(log_dir.path, f"checkpoint failed: {exc}")

    def _checkpoint_marks(self) -> list[tuple[LogDir, tuple[dict[tuple[str, int], int], ...]]]:
        """Each online dir with its logs' recovery points, HWs, log start offsets and first
        dirty offsets."""
        out = []
        for log_dir in self._dirs:
            if self.failures.is_offline(log_dir.path):
                continue
            logs = {k: self._logs[k] for k, d in self._dir_of.items() if d is log_dir}
            out.append((log_dir, ({k: v.recovery_point for k, v in logs.items()},
                                  {k: v.high_watermark for k, v in logs.items()},
                                  {k: v.log_start_offset for k, v in logs.items()},
                                  {k: v.first_dirty_offset for k, v in logs.items()})))
        return out

    def close(self) -> None:
        """Flush and close every log, checkpoint, mark a clean shutdown, release the locks."""
        for log in self.logs():
            try:
                log.close()
            except OSError as exc:
                self.mark_dir_offline(self._dir_of[(log.topic, log.partition)].path, str(exc))
        self.checkpoint()
        for log_dir in self._dirs:
            # An offline dir is not marked clean: the next start recovers its logs.
            if not self.failures.is_offline(log_dir.path):
                log_dir.mark_clean_shutdown()
        self._release_dirs()
        self._logs.clear()
        self._dir_of.clear()
        self._overrides.clear()
