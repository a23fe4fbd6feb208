"""The broker's side of its lifecycle with the active controller (Kafka's
BrokerLifecycleManager): registration, heartbeats, re-registration, controlled shutdown.

A broker registers once per process start under a fresh incarnation id, then heartbeats every
`broker.heartbeat.interval.ms` with the metadata offset it has applied. The controller
unfences it once that offset reaches its registration record. While fenced, and while a
controlled shutdown is pending, heartbeats go out faster so both steps take milliseconds
rather than heartbeat intervals (Kafka schedules them almost immediately too).

Clean restarts: at controlled shutdown the broker writes its epoch to `broker-epoch` in
`metadata.log.dir` (Kafka keeps it in the log dirs' clean-shutdown marker); the next start
reads and deletes that file and names the epoch as `previous_broker_epoch`, so the controller
lets it register at once instead of after its old session expires. A crash leaves no file.

A lapsed session: once the controller has not answered for `broker.session.timeout.ms`, it has
fenced this broker and moved its leaderships. The broker then stops acting as leader until
the controller answers again (`on_session_change`), so a leader cut off from the controller
but still reachable by clients sends them to the new leaders at once rather than letting
their requests time out (Kafka's leader keeps answering until the request timeout).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import trio

from broker.controller_client import ControllerClient, ControllerUnavailableError
from clients.protocol import ApiKey, ErrorCode

logger = logging.getLogger(__name__)

SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
# metadata.version levels this broker accepts: 1 (3.0-IV1) up to 21 (3.9-IV0), the releases
# whose BrokerRegistration/BrokerHeartbeat versions the codec speaks.
METADATA_VERSION_FEATURE = "metadata.version"
METADATA_VERSION_RANGE = (1, 21)
# Heartbeat period while fenced or shutting down, when waiting a full interval only delays.
FAST_HEARTBEAT_S = 0.05
RETRY_BACKOFF_S = 0.1
RETRY_BACKOFF_MAX_S = 2.0
# Repeated "controller unavailable" warnings are logged at most this often.
WARN_INTERVAL_S = 5.0
# Holds the broker epoch of the last clean shutdown, in metadata.log.dir.
BROKER_EPOCH_FILE = "broker-epoch"


def save_broker_epoch(directory: str | Path, epoch: int) -> None:
    """Durably record `epoch` as this broker's epoch at a clean shutdown."""
    path = Path(directory) / BROKER_EPOCH_FILE
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w") as out:
        out.write(f"{epoch}\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


def take_previous_broker_epoch(directory: str | Path) -> int:
    """The epoch saved by the last clean shutdown, deleting the file; -1 when there is none.

    Deleting it at start means a crash of this process leaves nothing behind for the next
    start to claim."""
    path = Path(directory) / BROKER_EPOCH_FILE
    try:
        text = path.read_text()
    except FileNotFoundError:
        return -1
    path.unlink(missing_ok=True)
    try:
        epoch = int(text.strip())
    except ValueError:
        logger.warning("ignoring unreadable %s: %r", path, text[:40])
        return -1
    return epoch if epoch >= 0 else -1


@dataclass(frozen=True)
class BrokerIdentity:
    """What a broker tells the controller about itself in BrokerRegistration."""

    broker_id: int
    cluster_id: str
    # (name, host, port, security protocol name) of each advertised broker listener.
    listeners: tuple[tuple[str, str, int, str], ...]
    rack: str | None = None
    log_dir_ids: tuple[uuid.UUID, ...] = ()
    # The epoch this broker held when it last shut down cleanly (-1: unknown). Kafka 3.7+
    # controllers let such a broker re-register at once instead of after its old session.
    previous_broker_epoch: int = -1
    incarnation_id: uuid.UUID = field(default_factory=uuid.uuid4)

    def registration_request(self) -> dict[str, Any]:
        """The BrokerRegistration request body (latest version's field names)."""
        low, high = METADATA_VERSION_RANGE
        return {
            "broker_id": self.broker_id,
            "cluster_id": self.cluster_id,
            "incarnation_id": self.incarnation_id,
            "listeners": [
                {"name": name, "host": host, "port": port,
                 "security_protocol": SECURITY_PROTOCOL_IDS[protocol]}
                for name, host, port, protocol in self.listeners
            ],
            "features": [{"name": METADATA_VERSION_FEATURE, "min_supported_version": low,
                          "max_supported_version": high}],
            "rack": self.rack,
            "is_migrating_zk_broker": False,
            "log_dirs": list(self.log_dir_ids),
            "previous_broker_epoch": self.previous_broker_epoch,
        }


@dataclass(frozen=True)
class LifecycleSettings:
    """Timings, from `broker.heartbeat.interval.ms`, `broker.session.timeout.ms` and
    `controller.quorum.request.timeout.ms`."""

    heartbeat_interval_s: float = 2.0
    session_timeout_s: float = 9.0
    request_timeout_s: float = 2.0


class BrokerLifecycleManager:
    """Registers the broker and keeps its session alive; run `run` in a nursery.

    `metadata_offset()` returns the offset of the newest metadata this broker has applied.
    With `clean_shutdown_dir` (metadata.log.dir), the epoch of the last clean shutdown found
    there becomes the identity's `previous_broker_epoch`, and a controlled shutdown saves the
    current epoch there for the next start."""

    def __init__(self, identity: BrokerIdentity, channel: ControllerClient,
                 metadata_offset: Callable[[], int],
                 settings: LifecycleSettings = LifecycleSettings(), *,
                 clean_shutdown_dir: str | Path | None = None) -> None:
        self._clean_shutdown_dir = clean_shutdown_dir
        if clean_shutdown_dir is not None:
            previous = take_previous_broker_epoch(clean_shutdown_dir)
            if previous >= 0 and identity.previous_broker_epoch < 0:
                logger.info("broker %d shut down cleanly with epoch %d", identity.broker_id,
                            previous)
                identity = dataclasses.replace(identity, previous_broker_epoch=previous)
        self.identity = identity
        self._channel = channel
        self._metadata_offset = metadata_offset
        self._settings = settings
        self._broker_epoch = -1
        self._is_fenced = True
        self._is_caught_up = False
        self._want_shut_down = False
        self._shut_down_granted = trio.Event()
        self._changed = trio.Event()
        self._wake = trio.Event()
        self._last_warning = -WARN_INTERVAL_S
        self._last_contact: float | None = None
        self._ever_registered = False
        # Ids of this broker's failed log dirs, carried by every heartbeat (Kafka's
        # BrokerHeartbeat offline_log_dirs) so the controller hears of a failure.
        self.offline_log_dirs: tuple[uuid.UUID, ...] = ()
        # Told True when the session with the controller has lapsed, False when it is back.
        self.on_session_change: Callable[[bool], None] | None = None

    @property
    def broker_epoch(self) -> int:
        """The epoch of the current registration; -1 while unregistered."""
        return self._broker_epoch

    @property
    def is_registered(self) -> bool:
        return self._broker_epoch >= 0

    @property
    def is_fenced(self) -> bool:
        return self._is_fenced

    @property
    def is_caught_up(self) -> bool:
        """The controller has seen this broker replay its own registration."""
        return self._is_caught_up

    async def wait_until(self, predicate: Callable[["BrokerLifecycleManager"], bool]) -> None:
        """Wait until `predicate(self)` holds; use under a cancel scope for a deadline."""
        while not predicate(self):
            await self._changed.wait()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
                  ) -> None:
        """Register, then heartbeat until cancelled or the controller grants shutdown."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch_session)
            task_status.started()
            await self._keep_session()
            nursery.cancel_scope.cancel()

    async def _watch_session(self) -> None:
        """Call `on_session_change(True)` once the controller has not answered for a whole
        session timeout (it has fenced this broker by then), `(False)` when it answers
        again."""
        lost = False
        while True:
            changed = self._changed
            contact = self._last_contact
            if contact is None:
                await changed.wait()
                continue
            expires = contact + self._settings.session_timeout_s
            if (trio.current_time() >= expires) != lost:
                lost = not lost
                if lost:
                    logger.warning("broker %d: no answer from the controller for %.1f s; not "
                                   "acting as leader until it answers",
                                   self.identity.broker_id, self._settings.session_timeout_s)
                else:
                    logger.info("broker %d: the controller answers again",
                                self.identity.broker_id)
                if self.on_session_change is not None:
                    self.on_session_change(lost)
            with trio.move_on_at(math.inf if lost else expires):
                await changed.wait()

    async def _keep_session(self) -> None:
        backoff = RETRY_BACKOFF_S
        while not self._shut_down_granted.is_set():
            if self.is_registered:
                ok = await self._heartbeat()
            else:
                ok = await self._register()
            if ok:
                backoff = RETRY_BACKOFF_S
                delay = self._next_heartbeat_delay()
            else:
                delay, backoff = backoff, min(backoff * 2, RETRY_BACKOFF_MAX_S)
            with trio.move_on_after(delay):
                await self._wake.wait()
            self._wake = trio.Event()

    def wake(self) -> None:
        """Send the next heartbeat now (news for the controller, e.g. a failed log dir)."""
        self._wake.set()

    async def controlled_shutdown(self, timeout_s: float) -> bool:
        """Ask the controller to move this broker's duties away; True once it agreed.

        Gives up after `timeout_s`, or when the controller has been unreachable for a whole
        session timeout: by then it fences the broker and moves leadership itself."""
        if not self.is_registered:
            return False
        logger.info("broker %d: starting controlled shutdown", self.identity.broker_id)
        self._want_shut_down = True
        self._last_contact = trio.current_time()
        self._wake.set()
        try:
            return await self._await_shut_down_granted(timeout_s)
        finally:
            # Whether or not the controller agreed, this process is going away on purpose.
            self._save_epoch()

    async def _await_shut_down_granted(self, timeout_s: float) -> bool:
        with trio.move_on_after(timeout_s):
            while not self._shut_down_granted.is_set():
                silent = trio.current_time() - (self._last_contact or 0.0)
                if silent >= self._settings.session_timeout_s:
                    logger.warning("broker %d: controller unreachable for %.0f s; shutting "
                                   "down without its agreement", self.identity.broker_id, silent)
                    return False
                with trio.move_on_after(self._settings.session_timeout_s - silent):
                    await self._shut_down_granted.wait()
        if self._shut_down_granted.is_set():
            logger.info("broker %d: controlled shutdown complete", self.identity.broker_id)
            return True
        logger.warning("broker %d: controlled shutdown did not finish within %.0f s",
                       self.identity.broker_id, timeout_s)
        return False

    def _save_epoch(self) -> None:
        if self._clean_shutdown_dir is None or not self.is_registered:
            return
        try:
            save_broker_epoch(self._clean_shutdown_dir, self._broker_epoch)
        except OSError as exc:
            logger.warning("broker %d: cannot save its epoch for a clean restart: %s",
                           self.identity.broker_id, exc)

    # -- one exchange each -----------------------------------------------------------------

    async def _register(self) -> bool:
        request = self.identity.registration_request()
        response = await self._send(ApiKey.BROKER_REGISTRATION, request)
        if response is None:
            return False
        code = response.get("error_code", ErrorCode.NONE)
        if code != ErrorCode.NONE:
            self._warn("broker %d: registration refused: %s", self.identity.broker_id,
                       _error_name(code))
            return False
        self._broker_epoch = int(response["broker_epoch"])
        self._ever_registered = True
        self._last_contact = trio.current_time()
        self._is_fenced, self._is_caught_up = True, False
        logger.info("broker %d registered with epoch %d (incarnation %s)",
                    self.identity.broker_id, self._broker_epoch, self.identity.incarnation_id)
        self._notify()
        return True

    async def _heartbeat(self) -> bool:
        request = {
            "broker_id": self.identity.broker_id,
            "broker_epoch": self._broker_epoch,
            "current_metadata_offset": max(self._metadata_offset(), 0),
            "want_fence": False,
            "want_shut_down": self._want_shut_down,
            "offline_log_dirs": list(self.offline_log_dirs),
        }
        response = await self._send(ApiKey.BROKER_HEARTBEAT, request)
        if response is None:
            return False
        code = response.get("error_code", ErrorCode.NONE)
        if code in (ErrorCode.STALE_BROKER_EPOCH, ErrorCode.BROKER_ID_NOT_REGISTERED):
            logger.warning("broker %d: heartbeat answered %s; registering again",
                           self.identity.broker_id, _error_name(code))
            self._broker_epoch, self._is_fenced, self._is_caught_up = -1, True, False
            self._notify()
            return True
        if code != ErrorCode.NONE:
            self._warn("broker %d: heartbeat failed: %s", self.identity.broker_id,
                       _error_name(code))
            return False
        self._last_contact = trio.current_time()
        fenced, caught_up = bool(response["is_fenced"]), bool(response["is_caught_up"])
        if fenced != self._is_fenced:
            logger.info("broker %d is now %s", self.identity.broker_id,
                        "fenced" if fenced else "unfenced")
        self._is_fenced, self._is_caught_up = fenced, caught_up
        if self._want_shut_down and response.get("should_shut_down"):
            self._shut_down_granted.set()
        self._notify()
        return True

    async def _send(self, api_key: int, body: dict[str, Any]) -> dict[str, Any] | None:
        timeout_ms = int(max(self._settings.request_timeout_s,
                             self._settings.heartbeat_interval_s) * 1000)
        try:
            return await self._channel.send(api_key, body, timeout_ms)
        except ControllerUnavailableError as exc:
            self._warn("broker %d: %s", self.identity.broker_id, exc)
            return None

    def _next_heartbeat_delay(self) -> float:
        if self._want_shut_down or self._is_fenced or not self.is_registered:
            return min(FAST_HEARTBEAT_S, self._settings.heartbeat_interval_s)
        return self._settings.heartbeat_interval_s

    def _notify(self) -> None:
        changed, self._changed = self._changed, trio.Event()
        changed.set()

    def _warn(self, message: str, *args: object) -> None:
        now = trio.current_time()
        if now - self._last_warning >= WARN_INTERVAL_S:
            self._last_warning = now
            # At start-up the quorum is usually still electing: expected, not a warning.
            level = logging.WARNING if self._ever_registered else logging.INFO
            logger.log(level, message, *args)


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"
