"""An anonymous follower of the metadata log: Kafka's observer without a node id (replica id -1).

A deterministic core in the shape of RaftClient: the owner calls ``receive(now_ms, response)``
for every answer (or failure) and ``poll(now_ms)``, which returns a ``Ready`` with the requests
to send and when to poll again; ``take()`` hands over what is committed. No sockets, threads
or wall clock here: ``metashell.live.attach`` runs it on a socket, the tests on scripted answers
and on the simulated quorum.

What it does, as KafkaRaftClient's observer does: it asks the bootstrap controllers in turn
until one names the leader (CurrentLeader and NodeEndpoints come with every Fetch answer,
NOT_LEADER_OR_FOLLOWER and the epoch errors included); it fetches ``__cluster_metadata-0``
from the leader with replica id -1, so it is tracked nowhere and counted in no quorum; it
downloads the leader's snapshot (FetchSnapshot, in chunks) when the Fetch answer names one;
it cuts its uncommitted tail back when the leader reports a diverging epoch; it keeps
fetched records at or above the high watermark pending and hands over only whole batches
below it, each once and in order. It never writes.

Memory: only the uncommitted tail and the handed-over batches not yet taken are kept.

A recorder (metashell.record) asks for more, and only it pays for it: with ``keep_bytes`` each
whole batch handed over comes with the bytes the leader served (``Committed.raw``, beside its
entries), and with ``start`` the follower goes on from where an archive ends rather than from 0.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from engine.common.errors import MetadataError
from engine.net.message_versions import convert_message
from engine.records.kio_codec import ErrorCode, protocol_module
from engine.raft import raft_messages as rm
from engine.raft.raft_config import DEFAULT_FETCH_MAX_BYTES, FETCH_MAX_WAIT_MS, SNAPSHOT_CHUNK_BYTES
from engine.raft.raft_io import Destination, InboundResponse, InFlight, OutboundRequest, Ready
from engine.raft.voter_set import Address, ReplicaKey
from engine.storage.log_reader import LogEntry, batches_of_bytes
from engine.storage.snapshot_writer import SnapshotId

E = ErrorCode
# The state machine's view of a fetched snapshot: (its records, its id) -> the state the owner
# replays onto (engine.raft knows no metadata image; the owner passes image_of_snapshot's)
SnapshotState = Callable[[list[LogEntry], SnapshotId], Any]
# ... or from the snapshot's bytes as downloaded (bytes, its id, where they came from): an owner
# that indexes them instead of decoding every record up front (metashell.live: the lazy image)
SnapshotBytesState = Callable[[bytes, SnapshotId, str], Any]
ANONYMOUS = ReplicaKey(-1, None)  # Kafka's observer without a node id: tracked by no leader
FETCH_VERSIONS = (13, 18)  # 13: the first with topic ids; 18 (KIP-1166) adds the fetcher's high watermark
UNKNOWN_HIGH_WATERMARK = -1  # Fetch v18: "not known" (its default, 2**63-1, means "not supported")
LEADER_ERRORS = (E.not_leader_or_follower, E.fenced_leader_epoch, E.unknown_leader_epoch)


class FollowerError(MetadataError):
    """The follower cannot go on (another cluster, no common version, a log that rewrote history)."""


@dataclass(frozen=True)
class FollowerSettings:
    """Kafka's client names and defaults (request.timeout.ms, retry.backoff.ms), the quorum's
    fetch timeout after which a silent leader is given up for the bootstrap servers."""

    request_timeout_ms: int = 30_000
    retry_backoff_ms: int = 100
    fetch_timeout_ms: int = 2_000  # controller.quorum.fetch.timeout.ms
    fetch_max_wait_ms: int = FETCH_MAX_WAIT_MS
    fetch_max_bytes: int = DEFAULT_FETCH_MAX_BYTES
    snapshot_max_bytes: int = SNAPSHOT_CHUNK_BYTES


@dataclass
class _Download:
    snapshot_id: SnapshotId
    data: bytearray = field(default_factory=bytearray)
    size: int = -1  # the snapshot's size, as the leader's first chunk tells it


@dataclass(frozen=True)
class Committed:
    """What ``take`` hands over: a reset (the state and the offset it stands at) if the log
    started anew, then whole committed batches, in order."""

    reset: tuple[Any, int] | None = None
    batches: list[list[LogEntry]] = field(default_factory=list)
    # with keep_bytes: each batch's bytes exactly as the leader served them, beside ``batches``
    raw: list[bytes] = field(default_factory=list)


class LogFollower:
    def __init__(self, bootstrap: Sequence[Address], *, snapshot_state: SnapshotState | None = None, empty_state: Any,
                 cluster_id: str | None = None, settings: FollowerSettings | None = None,
                 rng: random.Random | None = None, now_ms: int = 0,
                 snapshot_bytes_state: SnapshotBytesState | None = None, keep_bytes: bool = False,
                 start: tuple[int, int] | None = None):
        """``snapshot_state`` builds the starting state from a downloaded snapshot's records;
        ``snapshot_bytes_state``, when given, from its bytes instead (the records not decoded
        here). A MetadataError from either (a damaged snapshot) has it downloaded again once;
        damaged again, the follower stops with that error's line. ``empty_state`` is the state
        of a log starting at 0. ``keep_bytes``: hand over each batch's served bytes too
        (``Committed.raw``); ``start``: (next offset, epoch of the record before it) of a log held
        elsewhere up to there (an archive): no reset is handed over unless the leader's log moved
        past it (a snapshot then), and a divergence below it is fatal, as one below what was handed
        over is."""
        if not bootstrap:
            raise ValueError("a follower needs at least one bootstrap controller")
        if (snapshot_state is None) == (snapshot_bytes_state is None):
            raise ValueError("a follower needs one of snapshot_state and snapshot_bytes_state")
        self.bootstrap = tuple(bootstrap)
        self._snapshot_state, self._empty_state = snapshot_state, empty_state
        self._snapshot_bytes_state = snapshot_bytes_state
        self._damaged: SnapshotId | None = None  # the snapshot last downloaded damaged
        self.cluster_id = cluster_id
        self.settings = settings or FollowerSettings()
        self._bootstrap_index = (rng or random.Random()).randrange(len(self.bootstrap)) - 1
        self.leader_id = -1
        self.epoch = 0
        self.leader_address: Address | None = None
        self.high_watermark = -1
        self.applied_offset = -1  # the last offset handed over
        self.connected = False  # the leader answered our last fetch
        self.error: str | None = None
        self.fetch_offset = 0
        self._last_epoch = 0  # of the last record fetched (Kafka: 0 for an empty log)
        self._committed_epoch = 0  # of the last record handed over
        self._epochs: list[tuple[int, int]] = []  # (epoch, start offset) of the tail and what was handed over
        # (last offset, epoch, entries, served bytes or None): uncommitted
        self._tail: list[tuple[int, int, list[LogEntry], bytes | None]] = []
        self._download: _Download | None = None
        self._started = False  # a reset was handed over
        self._reset: tuple[Any, int] | None = None
        self._out: list[list[LogEntry]] = []
        self._keep_bytes = keep_bytes
        self._raw: list[bytes] = []  # with keep_bytes: parallel to _out
        self._inflight: dict[int, InFlight] = {}
        self._next_correlation_id = 1
        self._backoff_until_ms = 0
        self._last_ok_ms = now_ms
        # why the last request got no answer (cleared by the next answer): what a tool shows while retrying
        self.last_failure: str | None = None
        if start is not None and start[0] > 0:
            offset, epoch = start
            self.fetch_offset, self._last_epoch, self._committed_epoch = offset, epoch, epoch
            self._epochs = [(epoch, offset)]
            self.applied_offset = offset - 1
            self._started = True

    # -- the public surface -----------------------------------------------------------

    def poll(self, now_ms: int) -> Ready:
        ready = Ready([], now_ms)
        if self.error is not None:
            self._inflight.clear()
            ready.next_poll_ms = now_ms + 3_600_000
            return ready
        self._expire(now_ms)
        if self.leader_address is not None and now_ms - self._last_ok_ms >= self.settings.fetch_timeout_ms:
            # The leader went silent: back to the bootstrap servers (Kafka's fetch timeout).
            self._forget_leader(now_ms)
        if not self._inflight and now_ms >= self._backoff_until_ms:
            ready.messages.append(self._next_request(now_ms))
        times = [f.deadline_ms for f in self._inflight.values()]
        if not self._inflight:
            times.append(self._backoff_until_ms)
        if self.leader_address is not None:
            times.append(self._last_ok_ms + self.settings.fetch_timeout_ms)
        ready.next_poll_ms = max(now_ms, min(times))
        return ready

    def receive(self, now_ms: int, message: InboundResponse) -> None:
        flight = self._inflight.pop(message.correlation_id, None)
        if flight is None or self.error is not None:
            return  # an answer to a request given up on
        if message.response is None:
            self.last_failure = message.error
            self._failed(now_ms, flight)
            return
        self.last_failure = None
        try:
            if flight.api == "fetch":
                self._on_fetch(now_ms, flight, message.response)
            else:
                self._on_fetch_snapshot(now_ms, flight, message.response)
        except FollowerError as err:
            self.fail(str(err))

    def take(self) -> Committed:
        """Everything committed since the last take (the reset first, if the log started anew)."""
        taken = Committed(self._reset, self._out, self._raw)
        self._reset, self._out, self._raw = None, [], []
        return taken

    def fail(self, error: str) -> None:
        """Stop for good with a one-line error (the edge's, too: no common Fetch version)."""
        self.error = self.error or error
        self.connected = False
        self._inflight.clear()

    @property
    def downloading(self) -> SnapshotId | None:
        return self._download.snapshot_id if self._download else None

    @property
    def download_progress(self) -> tuple[int, int]:
        """(bytes of the snapshot downloaded so far, its size or -1 when not told yet); (0, -1) with none."""
        return (len(self._download.data), self._download.size) if self._download else (0, -1)

    # -- requests ----------------------------------------------------------------------

    def _next_request(self, now_ms: int) -> OutboundRequest:
        if self.leader_address is not None:
            destination = Destination(self.leader_id, self.leader_address)
        else:
            self._bootstrap_index = (self._bootstrap_index + 1) % len(self.bootstrap)
            destination = Destination(-1 - self._bootstrap_index, self.bootstrap[self._bootstrap_index])
        s = self.settings
        if self._download is not None and self.leader_address is not None:
            snapshot = self._download.snapshot_id
            request = rm.fetch_snapshot_request(self.cluster_id, ANONYMOUS, self.epoch,
                                                (snapshot.end_offset, snapshot.epoch), len(self._download.data),
                                                s.snapshot_max_bytes)
            return self._send("fetch_snapshot", destination, request, now_ms, (self.epoch, snapshot))
        request = rm.fetch_request(self.cluster_id, ANONYMOUS, self.epoch, self.fetch_offset, self._last_epoch,
                                   s.fetch_max_wait_ms, s.fetch_max_bytes)
        return self._send("fetch", destination, request, now_ms, (self.epoch, self.fetch_offset))

    def _send(self, api: str, destination: Destination, request: Any, now_ms: int, context: Any) -> OutboundRequest:
        correlation_id = self._next_correlation_id
        self._next_correlation_id += 1
        # A long poll is held up to max wait by the leader: the timeout runs after it.
        deadline = now_ms + self.settings.request_timeout_ms + (self.settings.fetch_max_wait_ms if api == "fetch"
                                                                 else 0)
        self._inflight[correlation_id] = InFlight(api, destination, deadline, context)
        return OutboundRequest(correlation_id, destination, request)

    def _expire(self, now_ms: int) -> None:
        for correlation_id, flight in list(self._inflight.items()):
            if now_ms >= flight.deadline_ms:
                del self._inflight[correlation_id]
                self._failed(now_ms, flight)

    def _failed(self, now_ms: int, flight: InFlight) -> None:
        """No answer (unreachable, connection lost, timed out): retry after the backoff."""
        if flight.destination.node_id == self.leader_id or flight.destination.node_id < 0:
            self.connected = False
        self._back_off(now_ms)

    def _back_off(self, now_ms: int) -> None:
        self._backoff_until_ms = now_ms + self.settings.retry_backoff_ms

    # -- who leads ----------------------------------------------------------------------

    def _forget_leader(self, now_ms: int) -> None:
        self.leader_address = None
        self.connected = False
        self._inflight.clear()  # late answers are ignored
        self._download = None
        self._last_ok_ms = now_ms

    def _learn_leader(self, now_ms: int, leader_id: int, epoch: int, response: Any, answered_by: Destination) -> bool:
        """Take what an answer says about the leader; True if it changed who or which epoch we follow."""
        if epoch < self.epoch or (epoch == self.epoch and (leader_id < 0 or (
                leader_id == self.leader_id and self.leader_address is not None))):
            return False  # nothing new (an answerer that knows no leader in our epoch tells nothing)
        address = next(((e.host, int(e.port)) for e in getattr(response, "node_endpoints", ()) or ()
                        if e.node_id == leader_id), None)
        if address is None and leader_id >= 0 and leader_id == answered_by.node_id:
            address = answered_by.address
        if epoch == self.epoch and leader_id == self.leader_id and address is None:
            return False
        self.epoch = epoch
        self.leader_id = leader_id
        self.leader_address = address if leader_id >= 0 else None
        self._download = None  # a download is from one leader in one epoch
        self._last_ok_ms = now_ms
        self._backoff_until_ms = 0  # ask the new leader at once
        return True

    def _partition_of(self, now_ms: int, where: str, response: Any) -> Any | None:
        """A Fetch or FetchSnapshot answer's one partition; None (backing off) on an error of the
        whole answer. Another cluster's answer is fatal, and so is a refusal of who we are: asking
        again as the same principal is refused again."""
        if response.error_code == E.inconsistent_cluster_id:
            raise FollowerError(f"{where} belongs to another cluster than {self.cluster_id} "
                                "(INCONSISTENT_CLUSTER_ID)")
        if response.error_code in (E.cluster_authorization_failed, E.topic_authorization_failed):
            name = E(response.error_code).name.upper()
            raise FollowerError(f"{where} refused to serve the metadata log: {name} (the principal needs "
                                "CLUSTER_ACTION on the cluster, or to be one of the controllers' super.users)")
        part = rm.only_partition(response)
        if response.error_code != E.none or part is None:
            self._back_off(now_ms)
            return None
        return part

    # -- Fetch -------------------------------------------------------------------------

    def _on_fetch(self, now_ms: int, flight: InFlight, response: Any) -> None:
        where = _where(flight.destination)
        part = self._partition_of(now_ms, where, response)
        if part is None:
            return
        leader = part.current_leader
        moved = self._learn_leader(now_ms, leader.leader_id, leader.leader_epoch, response, flight.destination)
        asked_epoch, asked_offset = flight.context
        if part.error_code != E.none or moved:
            if part.error_code == E.none and moved and leader.leader_id == flight.destination.node_id:
                pass  # the same leader in a newer epoch: fetch again at once
            elif not moved:
                if flight.destination.node_id == self.leader_id and part.error_code in LEADER_ERRORS:
                    self._forget_leader(now_ms)  # it no longer leads and names no one new
                self._back_off(now_ms)
            return
        if asked_epoch != self.epoch or asked_offset != self.fetch_offset or leader.leader_id != self.leader_id:
            return  # an answer to a question we no longer ask
        if self.leader_address is None:
            self.leader_address = flight.destination.address  # a bootstrap server that leads
        self.connected = True
        self._last_ok_ms = now_ms
        if part.diverging_epoch.epoch >= 0:
            self._truncate(part.diverging_epoch.end_offset, part.diverging_epoch.epoch)
            return
        if part.snapshot_id.end_offset >= 0:
            # the leader's high watermark, told beside the snapshot: what catching up reaches
            # for is past the snapshot's records, at the records committed after it
            self.high_watermark = max(self.high_watermark, part.high_watermark)
            self._download = _Download(SnapshotId(part.snapshot_id.end_offset, part.snapshot_id.epoch))
            return
        if not self._started and self.fetch_offset == 0:
            self._start(self._empty_state, -1)  # the log still starts at 0: the empty state
        data = rm.fetched_records(part)
        if data:
            try:
                self._append(data, where)
            except MetadataError:
                self._back_off(now_ms)  # a damaged answer: fetch it again
        if part.high_watermark >= 0:
            self.high_watermark = max(self.high_watermark, part.high_watermark)
        self._commit()

    def _append(self, data: bytes, where: str) -> None:
        position = 0
        for header, entries in batches_of_bytes(data, f"Fetch answer from {where}", None, False):
            raw = data[position:position + header.size_bytes] if self._keep_bytes else None
            position += header.size_bytes
            if header.last_offset < self.fetch_offset:
                continue
            if header.base_offset > self.fetch_offset:
                break  # a gap: fetch again from where we are
            entries = [e for e in entries if e.offset >= self.fetch_offset]
            epoch = header.partition_leader_epoch
            if not self._epochs or self._epochs[-1][0] != epoch:
                self._epochs.append((epoch, self.fetch_offset))
            self._tail.append((header.last_offset, epoch, entries, raw))
            self.fetch_offset = header.last_offset + 1
            self._last_epoch = epoch

    def _commit(self) -> None:
        """Hand over the whole batches below the high watermark."""
        done = 0
        for last_offset, epoch, entries, raw in self._tail:
            if last_offset >= self.high_watermark:
                break
            if entries:
                self._out.append(entries)
                if raw is not None:
                    self._raw.append(raw)
            self.applied_offset = last_offset
            self._committed_epoch = epoch
            done += 1
        del self._tail[:done]

    def _truncate(self, leader_end_offset: int, leader_epoch: int) -> None:
        """Cut the uncommitted tail back to where it agrees with the leader's epoch history."""
        target = min(leader_end_offset, self._end_offset_for_epoch(leader_epoch))
        if target <= self.applied_offset:
            raise FollowerError(f"the leader's log diverges at offset {target}, below the committed offset "
                                f"{self.applied_offset} already handed over")
        if self._keep_bytes:  # only whole batches have their bytes: cut at the start of the one holding target
            target = min([entries[0].offset for last, _, entries, _ in self._tail
                          if entries and entries[0].offset < target <= last] + [target])
        keep = []
        for last_offset, epoch, entries, raw in self._tail:
            kept = [e for e in entries if e.offset < target]
            if kept:
                keep.append((min(last_offset, target - 1), epoch, kept, raw))
        self._tail = keep
        self.fetch_offset = target
        self._epochs = [(e, start) for e, start in self._epochs if start < target]
        self._last_epoch = self._tail[-1][1] if self._tail else self._committed_epoch

    def _end_offset_for_epoch(self, epoch: int) -> int:
        """Kafka's leader epoch cache: the start of the first epoch after ``epoch`` (our log end if none)."""
        for later_epoch, start in self._epochs:
            if later_epoch > epoch:
                return start
        return self.fetch_offset

    # -- FetchSnapshot -----------------------------------------------------------------

    def _on_fetch_snapshot(self, now_ms: int, flight: InFlight, response: Any) -> None:
        where = _where(flight.destination)
        part = self._partition_of(now_ms, where, response)
        if part is None:
            return
        leader = part.current_leader
        if self._learn_leader(now_ms, leader.leader_id, leader.leader_epoch, response, flight.destination):
            return
        download, (asked_epoch, snapshot_id) = self._download, flight.context
        if download is None or download.snapshot_id != snapshot_id or asked_epoch != self.epoch:
            return
        if part.error_code != E.none:
            self._download = None  # e.g. the snapshot went: fetch again and be told the new one
            self._back_off(now_ms)
            return
        if (part.snapshot_id.end_offset, part.snapshot_id.epoch) != (snapshot_id.end_offset, snapshot_id.epoch) \
                or part.position != len(download.data):
            self._back_off(now_ms)
            return
        self.connected = True
        self._last_ok_ms = now_ms
        download.data += bytes(part.unaligned_records or b"")
        download.size = int(part.size)
        if len(download.data) < part.size:
            return
        self._download = None
        data, source = bytes(download.data), f"snapshot {snapshot_id.file_name} from {where}"
        download.data = bytearray()  # the bytes are held once, by whatever the state keeps of them
        try:
            if self._snapshot_bytes_state is not None:
                image = self._snapshot_bytes_state(data, snapshot_id, source)
            else:
                entries = [e for _, batch in batches_of_bytes(data, source, None, True) for e in batch]
                image = self._snapshot_state(entries, snapshot_id)  # type: ignore[misc]  # one is set
        except MetadataError as err:
            line = err.one_line() if hasattr(err, "one_line") else str(err)
            if self._damaged == snapshot_id:
                raise FollowerError(line) from None  # the leader's own copy is damaged: it would say so again
            self._damaged = snapshot_id
            self.last_failure = line
            self._back_off(now_ms)  # damaged on the way: download it again, once
            return
        self._damaged = None
        end = snapshot_id.end_offset
        self._start(image, end - 1)
        self._tail, self._epochs = [], [(snapshot_id.epoch, end)]
        self.fetch_offset, self._last_epoch = end, snapshot_id.epoch
        self._committed_epoch = snapshot_id.epoch
        self.high_watermark = max(self.high_watermark, end)

    def _start(self, image: Any, offset: int) -> None:
        """The log starts anew here: what was handed over and not taken yet is superseded."""
        self._reset, self._out, self._raw = (image, offset), [], []
        self._started = True
        self.applied_offset = offset


def fetch_at_version(request: Any, served: tuple[int, int] | None, high_watermark: int = -1) -> Any | None:
    """Our Fetch (v17, built by raft_messages) as the newest version from 13 to 18 the peer serves;
    None when it serves none of them. Below v15 the replica id is a top-level field; v18 tells the
    leader our high watermark, so that it answers at once when its own is past it and parks the
    fetch otherwise. Kafka's followers send -1 when they know none yet (KafkaRaftClient's
    buildFetchRequest): the leader then answers at once; its default, 2**63-1, would have it park
    our first fetch for max wait whenever no records are to be had."""
    if served is None or served[1] < FETCH_VERSIONS[0] or served[0] > FETCH_VERSIONS[1]:
        return None
    version = min(served[1], FETCH_VERSIONS[1])
    target = protocol_module("fetch", version, "request").FetchRequest
    extra = {"replica_id": request.replica_state.replica_id} if version < 15 else None
    converted = convert_message(request, target, extra)
    if version >= 18:
        hw = high_watermark if high_watermark >= 0 else UNKNOWN_HIGH_WATERMARK
        converted = dataclasses.replace(converted, topics=tuple(
            dataclasses.replace(t, partitions=tuple(dataclasses.replace(p, high_watermark=hw)
                                                    for p in t.partitions)) for t in converted.topics))
    return converted


def _where(destination: Destination) -> str:
    host, port = destination.address or ("?", 0)
    return f"controller {f'{host}:{port}' if ':' not in host else f'[{host}]:{port}'}"


__all__ = ["Committed", "FollowerError", "FollowerSettings", "LogFollower", "fetch_at_version"]
