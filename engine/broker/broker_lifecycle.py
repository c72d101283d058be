"""A broker's lifecycle toward the controller quorum, as Kafka's BrokerLifecycleManager runs it.

Pure and deterministic: no sockets, no threads, no clock reads. The node edge feeds it events
with the time they happened (``now_ms``) and sends what ``poll`` returns; it answers with
``handle_response`` or ``handle_failure`` for exactly the request object it was given.

Kafka's rules it follows (core/src/main/scala/kafka/server/BrokerLifecycleManager.scala, the same
in the 4.1.2 jar):

- ``start`` moves NOT_RUNNING to STARTING and registers at once: broker id, cluster id, the
  incarnation id, listeners, rack, supported feature ranges, the log directory ids (sorted), and
  the broker epoch of the last clean shutdown (-1 if none).
- Every failure (an error code, a timeout, a lost connection, an unexpected answer) is retried
  after an exponential backoff: 100 ms doubling up to ``broker.session.timeout.ms``, +-2 % jitter.
  A heartbeat error, STALE_BROKER_EPOCH included, is retried as a heartbeat: Kafka does not
  re-register on it (only ``resend_registration`` does, which Kafka's BrokerRegistrationTracker
  calls when the image's registration lost its directories).
- A successful registration stores the broker epoch and heartbeats at once.
- STARTING heartbeats every 10 ms until the controller says it is caught up (then RECOVERY);
  RECOVERY moves to RUNNING once a heartbeat says it is not fenced; after that, one heartbeat
  every ``broker.heartbeat.interval.ms``. ``want_fence`` is true until ``set_ready_to_unfence``.
- ``begin_controlled_shutdown`` in RUNNING moves to PENDING_CONTROLLED_SHUTDOWN and heartbeats at
  once with ``want_shut_down``; the first answer that does not allow it yet brings the next
  heartbeat after 50 ms, later ones after the interval; ``should_shut_down`` ends in
  SHUTTING_DOWN. In any other state it shuts down at once.
- One request at most is in flight: a communication that falls due meanwhile is sent as soon as
  the answer comes (unless that answer was a failure, which always backs off).
- No registration within ``initial.broker.registration.timeout.ms`` shuts the broker down, and so
  does an offline log directory the controller has not acknowledged within
  ``log.dir.failure.timeout.ms``.
- A request unanswered after half the session timeout is a failure (Kafka's heartbeat channel
  times out at ``broker.session.timeout.ms / 2``, KAFKA-14392).
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from engine.image.metadata_image import MetadataImage
from engine.image.metadata_version import record_versions
from engine.records.kio_codec import ErrorCode, i16, i32, i64, protocol_module, u16

_REGISTRATION = protocol_module("broker_registration", 4, "request")
_HEARTBEAT = protocol_module("broker_heartbeat", 1, "request")

# Kafka's fixed cadences inside the state machine (not configurable there either)
STARTING_HEARTBEAT_MS = 10  # until caught up: a broker with nothing to recover starts sooner
FIRST_SHUTDOWN_RETRY_MS = 50  # after the first "not yet": a quick controlled shutdown ends sooner
# Kafka's resend backoff: ExponentialBackoff(100, 2, broker.session.timeout.ms, 0.02)
BACKOFF_INITIAL_MS = 100
BACKOFF_MULTIPLIER = 2
BACKOFF_JITTER = 0.02


class BrokerState(enum.IntEnum):
    """Kafka's org.apache.kafka.metadata.BrokerState, with its wire values (the broker-state metric)."""

    NOT_RUNNING = 0
    STARTING = 1
    RECOVERY = 2
    RUNNING = 3
    PENDING_CONTROLLED_SHUTDOWN = 6
    SHUTTING_DOWN = 7


@dataclass(frozen=True, slots=True)
class Listener:
    """One advertised listener, as the registration carries it (security_protocol: 0 PLAINTEXT,
    1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL)."""

    name: str
    host: str
    port: int
    security_protocol: int = 0


@dataclass(frozen=True, slots=True)
class LifecycleConfig:
    """What the lifecycle needs of the broker's configuration, by Kafka's names and defaults."""

    broker_id: int  # node.id
    cluster_id: str  # meta.properties
    incarnation_id: uuid.UUID  # new at every process start
    listeners: tuple[Listener, ...]  # advertised.listeners
    supported_features: Mapping[str, tuple[int, int]]  # feature name -> (min, max) supported
    log_dir_ids: tuple[uuid.UUID, ...]  # directory.id of each online log dir in meta.properties
    rack: str | None = None  # broker.rack
    heartbeat_interval_ms: int = 2000  # broker.heartbeat.interval.ms
    session_timeout_ms: int = 9000  # broker.session.timeout.ms
    initial_registration_timeout_ms: int = 60000  # initial.broker.registration.timeout.ms
    log_dir_failure_timeout_ms: int = 30000  # log.dir.failure.timeout.ms

    @property
    def request_timeout_ms(self) -> int:
        """How long a registration or heartbeat may go unanswered (Kafka's heartbeat channel)."""
        return self.session_timeout_ms // 2


def uuid_order(value: uuid.UUID) -> tuple[int, int]:
    """Java's Uuid.compareTo: the two halves as signed longs (Kafka sorts the log dirs so)."""
    high, low = value.int >> 64, value.int & ((1 << 64) - 1)
    return (high - (1 << 64) if high >> 63 else high, low - (1 << 64) if low >> 63 else low)


def resend_backoff_ms(failed_attempts: int, max_ms: int, draw: float | None = None) -> int:
    """Kafka's ExponentialBackoff(100, 2, max_ms, 0.02) after ``failed_attempts`` failures.
    ``draw`` is a uniform number in [0, 1) for the jitter; None means none (deterministic)."""
    if max_ms <= BACKOFF_INITIAL_MS:
        return BACKOFF_INITIAL_MS  # Kafka: no room to grow, the initial interval always
    term = BACKOFF_INITIAL_MS * BACKOFF_MULTIPLIER ** min(failed_attempts, 64)
    factor = 1.0 if draw is None else 1 - BACKOFF_JITTER + 2 * BACKOFF_JITTER * draw
    return int(min(term * factor, max_ms))


@dataclass(slots=True)
class _InFlight:
    request: Any
    sent_ms: int
    offline_dirs: tuple[uuid.UUID, ...] = ()  # what a heartbeat reported, acknowledged by its NONE


@dataclass(slots=True)
class _OfflineDir:
    deadline_ms: int  # shut down if not acknowledged by then
    acknowledged: bool = False


@dataclass
class BrokerLifecycle:
    """One broker incarnation's registration and heartbeats (see the module's rules)."""

    config: LifecycleConfig
    # a uniform [0, 1) source for the backoff jitter; None keeps retries exactly deterministic
    jitter: Callable[[], float] | None = None

    state: BrokerState = field(default=BrokerState.NOT_RUNNING, init=False)
    broker_epoch: int = field(default=-1, init=False)  # -1 until registered
    shutdown_reason: str | None = field(default=None, init=False)
    caught_up: bool = field(default=False, init=False)  # the controller said so once (Kafka's initialCatchUpFuture)
    unfenced: bool = field(default=False, init=False)  # reached RUNNING once (Kafka's initialUnfenceFuture)
    failed_attempts: int = field(default=0, init=False)  # consecutive failures, for the backoff

    def __post_init__(self) -> None:
        self.previous_broker_epoch = -1
        self._metadata_offset = -1
        self._ready_to_unfence = False
        self._registered = False
        self._registration_succeeded = False
        self._registration_deadline_ms: int | None = None
        self._got_shutdown_answer = False
        self._in_flight: _InFlight | None = None
        self._next_send_ms: int | None = None  # when the next communication falls due
        self._send_when_answered = False  # one fell due while another was in flight
        self._offline: dict[uuid.UUID, _OfflineDir] = {}

    # -- inputs from the broker --------------------------------------------------------------

    def start(self, now_ms: int, previous_broker_epoch: int = -1) -> None:
        """Begin STARTING: register at once. ``previous_broker_epoch`` is the epoch written at the
        last clean shutdown (-1 after a crash), which lets the controller keep the broker's ELR."""
        if self.state is not BrokerState.NOT_RUNNING:
            return
        self.previous_broker_epoch = previous_broker_epoch
        self.state = BrokerState.STARTING
        self._registration_deadline_ms = now_ms + self.config.initial_registration_timeout_ms
        self._schedule(now_ms, 0)

    def metadata_offset(self, offset: int) -> None:
        """The broker's last applied metadata offset (-1 before its first), sent in heartbeats."""
        self._metadata_offset = offset

    def set_ready_to_unfence(self, now_ms: int) -> None:
        """The broker has published the metadata it caught up to and may serve: ask to be unfenced."""
        self._ready_to_unfence = True
        self._schedule(now_ms, 0)

    def set_offline_dirs(self, dir_ids: Iterable[uuid.UUID], now_ms: int) -> None:
        """Log directories that failed (never online again in this incarnation, as in Kafka):
        reported in every heartbeat from now on; each must be acknowledged within the failure timeout."""
        added = False
        for dir_id in dir_ids:
            if dir_id not in self._offline:
                self._offline[dir_id] = _OfflineDir(now_ms + self.config.log_dir_failure_timeout_ms)
                added = True
        if added and self._registered:
            self._schedule(now_ms, 0)

    def resend_registration(self, now_ms: int) -> None:
        """Register again before the next heartbeat (Kafka: the image's registration needs refreshing)."""
        self._registered = False
        self._schedule(now_ms, 0)

    def begin_controlled_shutdown(self, now_ms: int) -> None:
        """SIGTERM: from RUNNING, ask the controller to move our leaderships first; from any other
        state there is nothing to hand over, so shut down at once."""
        if self.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN:
            return
        if self.state is BrokerState.RUNNING:
            self.state = BrokerState.PENDING_CONTROLLED_SHUTDOWN
            self._schedule(now_ms, 0)  # let the controller start moving leaders now
            return
        self.begin_shutdown(f"controlled shutdown skipped in state {self.state.name}")

    def begin_shutdown(self, reason: str = "shutdown requested") -> None:
        """Stop talking to the controller (Kafka's beginShutdown): SHUTTING_DOWN, nothing sent again."""
        if self.state is BrokerState.SHUTTING_DOWN:
            return
        self.state = BrokerState.SHUTTING_DOWN
        self.shutdown_reason = reason
        self._in_flight = None
        self._next_send_ms = None

    # -- what to send, and when ----------------------------------------------------------------

    def poll(self, now_ms: int) -> list[Any]:
        """The requests to send now (at most one): a BrokerRegistrationRequest v4 or a
        BrokerHeartbeatRequest v1."""
        self._advance(now_ms)
        if self.state in (BrokerState.NOT_RUNNING, BrokerState.SHUTTING_DOWN) or self._in_flight is not None:
            return []
        if self._next_send_ms is None or now_ms < self._next_send_ms:
            return []
        self._next_send_ms = None
        if self._registered:
            offline = tuple(sorted(self._offline, key=uuid_order))
            request = self._heartbeat(offline)
        else:
            offline, request = (), self._registration()
        self._in_flight = _InFlight(request, now_ms, offline)
        return [request]

    def next_poll_ms(self, now_ms: int) -> int | None:
        """When ``poll`` next has something to do (never before ``now_ms``); None: never again."""
        self._advance(now_ms)
        if self.state in (BrokerState.NOT_RUNNING, BrokerState.SHUTTING_DOWN):
            return None
        deadlines = [d.deadline_ms for d in self._offline.values() if not d.acknowledged]
        if not self._registration_succeeded and self._registration_deadline_ms is not None:
            deadlines.append(self._registration_deadline_ms)
        if self._in_flight is not None:
            deadlines.append(self._in_flight.sent_ms + self.config.request_timeout_ms)
        elif self._next_send_ms is not None:
            deadlines.append(self._next_send_ms)
        return max(now_ms, min(deadlines)) if deadlines else None

    @property
    def in_flight(self) -> Any | None:
        """The request sent and not yet answered, if any."""
        return self._in_flight.request if self._in_flight is not None else None

    @property
    def ready_to_unfence(self) -> bool:
        return self._ready_to_unfence

    @property
    def registered(self) -> bool:
        return self._registered

    @property
    def offline_dirs(self) -> dict[uuid.UUID, bool]:
        """Each offline log directory and whether the controller has acknowledged it."""
        return {d: o.acknowledged for d, o in self._offline.items()}

    # -- answers -----------------------------------------------------------------------------

    def handle_response(self, request: Any, response: Any, now_ms: int) -> bool:
        """The controller's answer to ``request``; False (and ignored) if it is not the one in
        flight (answered already, timed out, or from before a shutdown)."""
        in_flight = self._take(request, now_ms)
        if in_flight is None:
            return False
        expected = "BrokerRegistrationResponse" if _is_registration(request) else "BrokerHeartbeatResponse"
        if type(response).__name__ != expected or not hasattr(response, "error_code"):
            self._after_failure(now_ms)  # Kafka: an invalid response type is retried like any failure
        elif _is_registration(request):
            self._registration_answer(response, now_ms)
        else:
            self._heartbeat_answer(response, in_flight, now_ms)
        return True

    def handle_failure(self, request: Any, now_ms: int) -> bool:
        """``request`` got no answer (timeout, lost connection, not sent): retry after the backoff.
        False (and ignored) if it is not the one in flight."""
        if self._take(request, now_ms) is None:
            return False
        self._after_failure(now_ms)
        return True

    # -- inside --------------------------------------------------------------------------------

    def _take(self, request: Any, now_ms: int) -> _InFlight | None:
        self._advance(now_ms)
        if self._in_flight is None or self._in_flight.request is not request:
            return None
        in_flight, self._in_flight = self._in_flight, None
        return in_flight

    def _advance(self, now_ms: int) -> None:
        """Run what fell due by ``now_ms``: the shutdown deadlines, the request timeout, and a
        communication due while one is in flight (sent as soon as the answer comes)."""
        if self.state in (BrokerState.NOT_RUNNING, BrokerState.SHUTTING_DOWN):
            return
        if not self._registration_succeeded and self._registration_deadline_ms is not None \
                and now_ms >= self._registration_deadline_ms:
            self.begin_shutdown("unable to register with the controller quorum")
            return
        for dir_id, offline in self._offline.items():
            if not offline.acknowledged and now_ms >= offline.deadline_ms:
                self.begin_shutdown(f"could not report offline log dir {dir_id} to the controller")
                return
        if self._in_flight is not None:
            if now_ms >= self._in_flight.sent_ms + self.config.request_timeout_ms:
                self._in_flight = None
                self._after_failure(now_ms)
            elif self._next_send_ms is not None and now_ms >= self._next_send_ms:
                self._next_send_ms = None
                self._send_when_answered = True

    def _schedule(self, now_ms: int, delay_ms: int) -> None:
        # a later schedule replaces the earlier one, as Kafka's deferred "communication" event
        if self.state in (BrokerState.NOT_RUNNING, BrokerState.SHUTTING_DOWN):
            return
        if self._send_when_answered:
            delay_ms = 0
        self._send_when_answered = False
        self._next_send_ms = now_ms + delay_ms
        if self._in_flight is not None and delay_ms == 0:
            self._next_send_ms = None
            self._send_when_answered = True

    def _after_failure(self, now_ms: int) -> None:
        draw = self.jitter() if self.jitter is not None else None
        delay_ms = resend_backoff_ms(self.failed_attempts, self.config.session_timeout_ms, draw)
        self.failed_attempts += 1
        self._send_when_answered = False  # never straight back after a failure
        self._schedule(now_ms, delay_ms)

    def _registration_answer(self, response: Any, now_ms: int) -> None:
        if response.error_code != ErrorCode.none:
            self._after_failure(now_ms)
            return
        self.failed_attempts = 0
        self.broker_epoch = int(response.broker_epoch)
        self._registered = self._registration_succeeded = True
        self._schedule(now_ms, 0)  # heartbeat at once

    def _heartbeat_answer(self, response: Any, in_flight: _InFlight, now_ms: int) -> None:
        if response.error_code != ErrorCode.none:
            self._after_failure(now_ms)  # STALE_BROKER_EPOCH too: Kafka retries, it does not re-register
            return
        self.failed_attempts = 0
        for dir_id in in_flight.offline_dirs:
            self._offline[dir_id].acknowledged = True
        interval_ms = self.config.heartbeat_interval_ms
        if self.state is BrokerState.STARTING:
            if response.is_caught_up:
                self.state, self.caught_up = BrokerState.RECOVERY, True
            self._schedule(now_ms, STARTING_HEARTBEAT_MS)
        elif self.state is BrokerState.RECOVERY:
            if not response.is_fenced:
                self.state, self.unfenced = BrokerState.RUNNING, True
            self._schedule(now_ms, interval_ms)
        elif self.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN:
            if response.should_shut_down:
                self.begin_shutdown("controlled shutdown complete")
                return
            self._schedule(now_ms, interval_ms if self._got_shutdown_answer else FIRST_SHUTDOWN_RETRY_MS)
            self._got_shutdown_answer = True
        else:
            self._schedule(now_ms, interval_ms)

    def _registration(self) -> Any:
        c = self.config
        return _REGISTRATION.BrokerRegistrationRequest(
            broker_id=i32(c.broker_id), cluster_id=c.cluster_id, incarnation_id=c.incarnation_id,
            listeners=tuple(_REGISTRATION.Listener(name=lst.name, host=lst.host, port=u16(lst.port),
                                                   security_protocol=i16(lst.security_protocol))
                            for lst in c.listeners),
            features=tuple(_REGISTRATION.Feature(name=name, min_supported_version=i16(low),
                                                 max_supported_version=i16(high))
                           for name, (low, high) in sorted(c.supported_features.items())),
            rack=c.rack, is_migrating_zk_broker=False, log_dirs=tuple(sorted(c.log_dir_ids, key=uuid_order)),
            previous_broker_epoch=i64(self.previous_broker_epoch))

    def _heartbeat(self, offline: tuple[uuid.UUID, ...]) -> Any:
        return _HEARTBEAT.BrokerHeartbeatRequest(
            broker_id=i32(self.config.broker_id), broker_epoch=i64(self.broker_epoch),
            current_metadata_offset=i64(self._metadata_offset), want_fence=not self._ready_to_unfence,
            want_shut_down=self.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN, offline_log_dirs=offline)


def registration_needs_refresh(image: MetadataImage, broker_id: int) -> bool:
    """Kafka's BrokerRegistrationTracker: once metadata.version has directory assignment
    (3.7-IV2), a registration in the image without directories is stale, so the broker calls
    ``resend_registration``. No registration yet: the lifecycle is still sending it."""
    registration = image.cluster.brokers.get(broker_id)
    level = image.metadata_version
    if registration is None or level is None:
        return False
    return record_versions(level).directory_assignment and not registration.directories


def _is_registration(request: Any) -> bool:
    return type(request).__name__ == "BrokerRegistrationRequest"
