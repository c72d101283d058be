"""``metashell record``: follow a quorum's committed metadata log and keep it in an archive.

The recorder is the live shell's observer (replica id -1, Fetch and FetchSnapshot) writing what
it is handed to a metashell.record.archive.Archive: each committed batch's bytes as the leader
served them, the leader's snapshot when the leader's log moved past the archive (a gap), a
snapshot of its own image every ``snapshot_every_records`` records, retention.

It never stops by itself: a leader change, a controller restart or a whole quorum down is
retried with the client's backoff, from the last offset held; a failed write (a full disk) is one
line, then the writes are retried every ``write_retry_ms`` while nothing more is fetched, and
the archive stays whole. What stops it: SIGTERM or SIGINT (a clean close, exit 0), or what
retrying cannot mend (another cluster, a refused login, a leader whose history diverges below
what is held): one line, exit 1.

It tells how it is doing on stderr, a line at a time: progress (offset, lag behind the high
watermark) every ``progress_interval_ms``, and at once what matters (a gap, a lost leader, a
failing write and its recovery).
"""

from __future__ import annotations

import asyncio
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from engine.admin import quorum_client
from engine.common.errors import MetadataError
from engine.image.image_writer import image_records
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import image_of_fetched_snapshot, load_log_dir
from engine.net.security_config import client_security
from engine.raft.log_follower import LogFollower
from engine.storage.snapshot_writer import SnapshotBuilder, SnapshotId
from metashell.live.attach import connection_settings, follower_settings
from metashell.record.archive import DEFAULT_SEGMENT_BYTES, Archive, ArchiveWriteError
from metashell.record.record_index import DEFAULT_INDEX_INTERVAL_MS, IndexKeeper
from metashell.record.link import Exchanges, ask_cluster_id, follow_loop, new_client, wake_from_thread
from metashell.record.snapshot_records import kraft_control_records

DEFAULT_SNAPSHOT_EVERY_RECORDS = 20_000
PROGRESS_INTERVAL_MS = 10_000
WRITE_RETRY_MS = 1_000
RETENTION_CHECK_MS = 60_000
CLOSE_WAIT_S = 10.0  # a clean close waits this long for an index update under way


@dataclass(frozen=True)
class RecordSettings:
    bootstrap: str
    archive: Path
    command_config: dict[str, str] = field(default_factory=dict)
    retention_ms: int | None = None
    snapshot_every_records: int = DEFAULT_SNAPSHOT_EVERY_RECORDS
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    progress_interval_ms: int = PROGRESS_INTERVAL_MS
    write_retry_ms: int = WRITE_RETRY_MS
    index_interval_ms: int = DEFAULT_INDEX_INTERVAL_MS  # the history index's updates (0: none, log builds it)


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


class Recorder:
    def __init__(self, settings: RecordSettings, *, log: Callable[[str], None],
                 clock_ms: Callable[[], int] = _monotonic_ms, wall_ms: Callable[[], int] = _wall_ms):
        """ConfigError (one line) for a bad --bootstrap-controller or command config."""
        self.s = settings
        self._log = log
        self._clock_ms, self._wall_ms = clock_ms, wall_ms
        self._addresses = quorum_client.parse_bootstrap(settings.bootstrap, "--bootstrap-controller")
        config = settings.command_config
        self._follower_settings = follower_settings(config)
        self._connection = connection_settings(config)
        self._security = client_security(config, "--command-config")
        self._configured_cluster_id = config.get("cluster.id") or None
        self._stop = asyncio.Event()
        self._wake: asyncio.Event | None = None
        self.archive = Archive(settings.archive, segment_bytes=settings.segment_bytes)
        self._delta: MetadataDelta | None = None
        self._last_ts = -1
        self._state_line = ""
        self._next_progress_ms = 0
        self._write_failing: str | None = None
        self._next_retention_ms = 0
        self.error: str | None = None
        self._index = (IndexKeeper(settings.archive, log=log, interval_ms=settings.index_interval_ms,
                                   on_done=self._index_done) if settings.index_interval_ms > 0 else None)
        self._loop: asyncio.AbstractEventLoop | None = None

    def stop(self) -> None:
        """Ask for a clean close (a signal handler's job)."""
        self._stop.set()
        if self._wake is not None:
            self._wake.set()

    # -- the run ----------------------------------------------------------------------------------

    async def run(self) -> int:
        """Record until stopped: 0 after a clean close, 1 after a fatal error (said in one line)."""
        self.archive.open()
        try:
            for note in self.archive.notes:
                self._log(note)
            return await self._run_open()
        finally:
            if self._index is not None:
                self._index.wait(CLOSE_WAIT_S)  # its reads end before the last writes
                if self._index.busy:
                    self._log("history index: an update still runs at the close; it is left to log "
                              "(the index is a cache: an update cut short is rolled back or redone)")
            try:
                self.archive.close()
            except ArchiveWriteError as err:
                self._log(f"closing: {err.one_line()}; those batches are fetched again at the next start")
            if self._index is not None and not self._index.busy and self.archive.durable_offset >= 0:
                self._index.update_now()  # the index as of the close: log answers at once

    def _index_done(self) -> None:
        """From the index's thread: wake the loop, whose writes waited for the update to end."""
        wake_from_thread(self._loop, self._wake)

    async def _run_open(self) -> int:
        loop = self._loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        self._wake = asyncio.Event()
        clients = [new_client(self._follower_settings, self._connection, self._security) for _ in range(2)]
        try:
            cluster_id = await self._cluster_id(clients[1])
            if cluster_id is None:
                return 0  # stopped while waiting
            self.archive.set_cluster_id(cluster_id)
            self._start_image()
            if self._index is not None and self.archive.durable_offset >= 0:
                self._index.say_state()
                self._index.maybe_start(self._clock_ms(), force=True)
            held = self.archive.next_offset
            start = (held, self.archive.last_epoch) if held is not None else None
            self._log(f"recording cluster {cluster_id} from {self.s.bootstrap} into {self.s.archive}"
                      + (f", going on from offset {held}" if held else ""))
            core = LogFollower(self._addresses, empty_state=None, cluster_id=cluster_id,
                               settings=self._follower_settings, now_ms=self._clock_ms(),
                               snapshot_bytes_state=self._snapshot_state, keep_bytes=True, start=start)
            await self._follow(core, clients[0])
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
            for client in clients:
                await client.close()
        if self.error is not None:
            self._log(f"stopped: {self.error}")
            return 1
        self._log(f"stopped; the archive holds offsets up to {self.archive.durable_offset}")
        return 0

    async def _cluster_id(self, client) -> str | None:
        """The quorum's cluster id (cluster.id from the command config, else DescribeCluster),
        asked until a controller answers; None when stopped first."""
        if self._configured_cluster_id:
            return self._configured_cluster_id

        def failed(failures: int, why: str) -> None:
            if failures % 10 == 0:
                self._log(f"waiting for the quorum at {self.s.bootstrap}: {why}")

        return await ask_cluster_id(client, self._addresses, self._follower_settings, stopped=self._stop.is_set,
                                    failed=failed, sleep=self._sleep, step_s=1.0, max_s=10.0)

    async def _sleep(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stop.wait(), seconds)
        except TimeoutError:
            pass

    async def _follow(self, core: LogFollower, client) -> None:
        def step(exchanges: Exchanges, now: int) -> int | None:
            wake_ms = now + self.s.write_retry_ms
            if self._write_failing is None:
                wake_ms = min(exchanges.poll(now), now + self.s.progress_interval_ms)
                self._take(core)
            self._write()
            self._housekeeping(core)
            if core.error is not None:
                self.error = core.error
                return None
            return wake_ms

        await follow_loop(core, client, self._follower_settings, self._clock_ms, self._wake, self._stop.is_set, step)

    # -- what the follower hands over -------------------------------------------------------------

    def _snapshot_state(self, data: bytes, snapshot_id: SnapshotId, where: str) -> Any:
        """The follower's state of a downloaded snapshot: its image (checked as it is indexed; a
        damaged download raises, and the follower downloads it again) and its bytes to archive."""
        return image_of_fetched_snapshot(data, snapshot_id, where), data, snapshot_id

    def _take(self, core: LogFollower) -> None:
        taken = core.take()
        if taken.reset is not None and taken.reset[0] is not None:  # (None, -1): the log starts at 0
            (image, data, snapshot_id), _ = taken.reset
            held = self.archive.next_offset
            reason = (f"the controllers deleted these records (their log starts at snapshot "
                      f"{snapshot_id.end_offset}-{snapshot_id.epoch}) before the recorder fetched them")
            if held is None:
                self._log(f"the leader's log starts at its snapshot {snapshot_id.file_name}: the archive starts there")
            elif snapshot_id.end_offset > held:
                self._log(f"GAP: offsets {held} to {snapshot_id.end_offset - 1} are lost to the archive ({reason}); "
                          f"going on from {snapshot_id.end_offset}")
            self.archive.reset(data, snapshot_id, reason, self._wall_ms())
            self._delta = MetadataDelta(image) if self._delta is not None else None
        for entries, raw in zip(taken.batches, taken.raw):
            self.archive.append(raw)
            if self._delta is not None:
                for entry in entries:
                    self._delta.replay(entry.record, entry.offset, entry.leader_epoch, entry.timestamp_ms)
            self._last_ts = entries[-1].timestamp_ms

    def _write(self) -> None:
        if not self.archive.queued or (self._index is not None and self._index.busy):
            return  # an index update reads the archive's files: they stay as they are until it ends
        try:
            self.archive.commit()
        except ArchiveWriteError as err:
            line = err.one_line()
            if line != self._write_failing:
                self._log(f"cannot write the archive: {line}; retrying every {self.s.write_retry_ms} ms "
                          "(nothing is fetched meanwhile; the archive stays as of offset "
                          f"{self.archive.durable_offset})")
            self._write_failing = line
            return
        if self._write_failing is not None:
            self._log(f"writing again: the archive holds offsets up to {self.archive.durable_offset}")
            self._write_failing = None
        self._maybe_snapshot()
        if self._index is not None:
            self._index.maybe_start(self._clock_ms())

    def _start_image(self) -> None:
        """The image at the archive's end, for its own snapshots (none asked: no image kept)."""
        if self.s.snapshot_every_records <= 0:
            return
        if self.archive.next_offset is None:
            self._delta = MetadataDelta(MetadataImage())
            return
        image, info = load_log_dir(self.s.archive)
        self._delta = MetadataDelta(image)
        self._last_ts = image.provenance.last_timestamp_ms
        for note in info.notes:
            self._log(f"note: {note}")

    def _maybe_snapshot(self) -> None:
        delta = self._delta
        if delta is None or self.archive.records_since_snapshot < self.s.snapshot_every_records:
            return
        if delta.open_transaction is not None:
            return  # a snapshot holds no half transaction: the next commit after it ends
        image = delta.apply()
        self._delta = MetadataDelta(image)
        snapshot_id = SnapshotId(self.archive.next_offset, self.archive.last_epoch)
        builder = SnapshotBuilder(epoch=snapshot_id.epoch, last_contained_log_timestamp_ms=self._last_ts,
                                  now_ms=self._wall_ms(), kraft_control=kraft_control_records(image.quorum))
        builder.add(image_records(image))
        try:
            self.archive.add_snapshot(snapshot_id, builder.finish())
        except ArchiveWriteError as err:
            self._log(f"no snapshot at offset {snapshot_id.end_offset}: {err.one_line()} (tried again later)")

    # -- telling how it goes ----------------------------------------------------------------------

    def _housekeeping(self, core: LogFollower) -> None:
        now = self._clock_ms()
        key, line = self._state(core)
        if key != self._state_line:
            if line:
                self._log(line)
            self._state_line = key
        if now >= self._next_progress_ms:
            self._next_progress_ms = now + self.s.progress_interval_ms
            held = self.archive.durable_offset
            # a new archive of a log that starts at its snapshot may hold that snapshot and no record
            # yet: it is as far as the snapshot's end, not a whole log behind
            through = max(held, (self.archive.next_offset or 0) - 1)
            hw = core.high_watermark
            lag = f", lag {max(0, hw - 1 - through):,} records behind the high watermark {hw:,}" if hw >= 0 else ""
            what = (f"offsets up to {held:,} held" if held >= 0 else
                    f"the leader's snapshot up to offset {through:,} held, no record yet" if through >= 0 else
                    "nothing held yet")
            self._log(f"progress: {what}{lag}; {len(self.archive.manifest.gaps)} gaps")
        if (self.s.retention_ms is not None and now >= self._next_retention_ms and self._write_failing is None
                and not (self._index is not None and self._index.busy)):
            self._next_retention_ms = now + RETENTION_CHECK_MS
            try:
                dropped = self.archive.drop_older_than(self._wall_ms() - self.s.retention_ms, self._wall_ms(),
                                                       self.s.retention_ms)
            except (OSError, MetadataError) as err:
                dropped = f"retention: not applied this time: {err}"
            if dropped:
                self._log(dropped)

    def _state(self, core: LogFollower) -> tuple[str, str]:
        """(what the connection's state is, a line saying it): a line when the state changes, not at each retry."""
        if core.connected:
            downloading = core.downloading
            if downloading is not None:
                return f"download {downloading}", f"downloading snapshot {downloading.file_name} from leader " \
                                                  f"{core.leader_id}"
            return f"leader {core.leader_id} {core.epoch}", f"following leader {core.leader_id} (epoch {core.epoch})"
        if not self._state_line:
            return "", ""  # not reached yet: the waiting line said where
        last = f" (last: {core.last_failure})" if core.last_failure else ""
        return "disconnected", f"disconnected, retrying from offset {core.fetch_offset}{last}"
