"""Which log directory holds each of this broker's replicas, told to the controller with
AssignReplicasToDirs (KIP-858), as Kafka's AssignmentsManager does.

Pure and deterministic: no sockets, no threads, no clock reads; the backoff jitter draws from
an injected ``random.Random``. The node edge sends what ``poll`` returns to the active
controller and answers with ``handle_response`` (None: failed or timed out).

Kafka's rules it follows (server's AssignmentsManager, Assignment and
AssignmentsManagerDeadlineFunction; ReplicaManager.maybeUpdateTopicAssignment; LogManager):

- Once metadata.version has directory assignment (3.7-IV2), a replica of this broker whose
  directory in the image is not one of the broker's online log dirs (UNASSIGNED, LOST,
  MIGRATING, or another broker's or a removed dir) gets a log in one of them, and that
  directory is queued for the controller. Kafka's LogManager picks the online dir holding the
  fewest logs (ties: configured order); so does this, counting this broker's replicas in the
  image. A replica whose directory is a failed dir of this broker is offline and left alone.
- A partition is queued again only when the image changes it (Kafka re-checks the partitions
  of each metadata delta) and stops being queued when the image shows an online dir of ours.
- One request in flight at most, of at most 2250 assignments (MAX_ASSIGNMENTS_PER_REQUEST),
  with broker_id and the broker epoch the image holds for us. A queued assignment that is no
  longer valid (topic or partition gone, this broker no longer a replica) is dropped at send.
- When to send: after a failure of the whole request, the backoff (100 ms doubling to 10 s,
  +-2 % jitter, from the failure count); with more than 2250 queued and none in flight, at
  once; otherwise 100 ms after queueing (batching). An earlier planned send time stands.
- The whole request failing (no answer, a wrong answer, a top-level error) puts every
  assignment back in the queue; a partition's error puts that one back; a partition the answer
  left out goes back too. Success: done (the image will show it).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from typing import Any, Iterable

from engine.broker.broker_lifecycle import resend_backoff_ms, uuid_order
from engine.common.directory_id import MIGRATING
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_version import record_versions
from engine.image.partition_registration import PartitionRegistration
from engine.records.kio_codec import ErrorCode, i32, i64, protocol_module

MAX_ASSIGNMENTS_PER_REQUEST = 2250  # AssignReplicasToDirsRequest.MAX_ASSIGNMENTS_PER_REQUEST (4.3.1)
BACKOFF_MAX_MS = 10_000  # AssignmentsManager.STANDARD_BACKOFF: 100 ms, x2, up to 10 s, 2 % jitter
BATCH_DELAY_MS = 100  # the backoff's initial interval: the wait that lets assignments batch
_REQUEST = protocol_module("assign_replicas_to_dirs", 0, "request")

PartitionKey = tuple[uuid.UUID, int]  # (topic id, partition index)


@dataclass(slots=True)
class AssignmentCounters:
    requests_sent: int = 0
    assigned: int = 0  # partitions the controller accepted
    partition_errors: int = 0
    request_failures: int = 0
    dropped: int = 0  # no longer valid when their turn came


class DirAssignments:
    """One broker's replica-to-directory assignments toward the controller (see the module)."""

    def __init__(self, broker_id: int, log_dir_ids: Iterable[uuid.UUID], rng: random.Random | None = None) -> None:
        self.broker_id = broker_id
        self.log_dir_ids = tuple(log_dir_ids)  # configured order: ties go to the first
        self.rng = rng
        self.counters = AssignmentCounters()
        self._image: MetadataImage | None = None
        self._failed: frozenset[uuid.UUID] = frozenset()
        self._seen: dict[PartitionKey, PartitionRegistration] = {}
        self._placed: dict[PartitionKey, uuid.UUID] = {}  # where our (simulated) log of each replica lives
        self._ready: dict[PartitionKey, uuid.UUID] = {}
        self._in_flight: tuple[Any, dict[PartitionKey, uuid.UUID]] | None = None
        self._send_at_ms: int | None = None
        self._global_failures = 0

    @property
    def online_dirs(self) -> tuple[uuid.UUID, ...]:
        return tuple(d for d in self.log_dir_ids if d not in self._failed)

    def set_failed_dirs(self, dir_ids: Iterable[uuid.UUID]) -> None:
        """Log dirs whose disk failed: never a target again, their replicas left offline."""
        self._failed = self._failed | frozenset(dir_ids)
        for key in [k for k, d in self._ready.items() if d in self._failed]:
            del self._ready[key]

    def set_image(self, image: MetadataImage, now_ms: int) -> None:
        """The broker's newest image: queue the replicas it shows outside our online dirs."""
        self._image = image
        level = image.metadata_version
        online = self.online_dirs
        if level is None or not record_versions(level).directory_assignment or not online:
            return
        mine = self._my_replicas(image)
        loads = {d: 0 for d in online}
        for _, directory in mine:
            if directory in loads:
                loads[directory] += 1
        queued = False
        for key, directory in mine:
            registration = image.topics.by_id[key[0]].partitions[key[1]]
            changed = self._seen.get(key) != registration
            self._seen[key] = registration
            if directory in loads:
                self._placed[key] = directory  # the image shows it in one of ours: done
                self._ready.pop(key, None)
                continue
            placed = self._placed.get(key)
            if directory in self._failed or placed in self._failed:
                continue  # the log sits on a failed disk: offline, nothing to assign
            if placed is None:
                placed = min(online, key=lambda d: loads[d])  # min keeps the first of equals
                self._placed[key] = placed
                loads[placed] += 1
            if changed:
                self._ready[key] = placed
                queued = True
        mine_keys = {key for key, _ in mine}
        for key in [k for k in self._seen if k not in mine_keys]:
            del self._seen[key]
            self._placed.pop(key, None)
        if queued:
            self._reschedule(now_ms)

    def poll(self, now_ms: int) -> list[Any]:
        """The AssignReplicasToDirsRequest v0 to send to the controller now, if any (one at most)."""
        if self._send_at_ms is None or now_ms < self._send_at_ms or self._image is None:
            return []
        self._send_at_ms = None
        if self._in_flight is not None:
            return []  # the answer reschedules
        image = self._image
        batch: dict[PartitionKey, uuid.UUID] = {}
        for key in list(self._ready):
            if len(batch) >= MAX_ASSIGNMENTS_PER_REQUEST:
                break
            directory = self._ready.pop(key)
            if self._valid(image, key):
                batch[key] = directory
            else:
                self.counters.dropped += 1
        if not batch:
            return []
        registration = image.cluster.brokers.get(self.broker_id)
        request = _build(self.broker_id, registration.epoch if registration is not None else -1, batch)
        self._in_flight = (request, batch)
        self.counters.requests_sent += 1
        return [request]

    def next_poll_ms(self, now_ms: int) -> int | None:
        """When ``poll`` next has something to do; None: nothing queued (or waiting for an answer)."""
        return None if self._send_at_ms is None else max(now_ms, self._send_at_ms)

    def handle_response(self, request: Any, response: Any | None, now_ms: int) -> bool:
        """The controller's answer (None: failed); False if ``request`` is not the one in flight."""
        if self._in_flight is None or self._in_flight[0] is not request:
            return False
        _, sent = self._in_flight
        self._in_flight = None
        if type(response).__name__ != "AssignReplicasToDirsResponse" or response.error_code != ErrorCode.none:
            self._global_failures += 1
            self.counters.request_failures += 1
            for key, directory in sent.items():
                self._ready.setdefault(key, directory)
        else:
            self._global_failures = 0
            for result in response.directories:
                for topic in result.topics:
                    for p in topic.partitions:
                        key = (topic.topic_id, int(p.partition_index))
                        directory = sent.pop(key, None)
                        if directory is None:
                            continue  # not asked for: Kafka logs it
                        if p.error_code == ErrorCode.none:
                            self.counters.assigned += 1
                        else:
                            self.counters.partition_errors += 1
                            self._ready.setdefault(key, directory)
            for key, directory in sent.items():  # left out of the answer
                self._ready.setdefault(key, directory)
        if self._ready:
            self._reschedule(now_ms)
        return True

    # -- status --------------------------------------------------------------------------------

    def pending(self) -> int:
        """Queued plus in flight (Kafka's QueuedReplicaToDirAssignments)."""
        return len(self._ready) + (len(self._in_flight[1]) if self._in_flight is not None else 0)

    def placement(self, key: PartitionKey) -> uuid.UUID | None:
        """The directory holding our replica of ``key`` (as placed here or shown by the image)."""
        return self._placed.get(key)

    @property
    def in_flight(self) -> Any | None:
        return self._in_flight[0] if self._in_flight is not None else None

    # -- inside --------------------------------------------------------------------------------

    def _my_replicas(self, image: MetadataImage) -> list[tuple[PartitionKey, uuid.UUID]]:
        """Our replicas in a stable order (topic name, partition) with their image directory."""
        out = []
        for name in sorted(image.topics.by_name):
            topic_id = image.topics.by_name[name]
            topic = image.topics.by_id[topic_id]
            for partition_id in sorted(topic.partitions):
                p = topic.partitions[partition_id]
                if self.broker_id in p.replicas:
                    index = p.replicas.index(self.broker_id)
                    directory = p.directories[index] if len(p.directories) == len(p.replicas) else MIGRATING
                    out.append(((topic_id, partition_id), directory))
        return out

    def _valid(self, image: MetadataImage, key: PartitionKey) -> bool:
        topic = image.topics.by_id.get(key[0])
        partition = topic.partitions.get(key[1]) if topic is not None else None
        return partition is not None and self.broker_id in partition.replicas

    def _reschedule(self, now_ms: int) -> None:
        if self._global_failures > 0:
            draw = self.rng.random() if self.rng is not None else None
            delay_ms = resend_backoff_ms(self._global_failures, BACKOFF_MAX_MS, draw)
        elif len(self._ready) > MAX_ASSIGNMENTS_PER_REQUEST and self._in_flight is None:
            delay_ms = 0
        else:
            delay_ms = BATCH_DELAY_MS
        send_at = now_ms + delay_ms
        if self._send_at_ms is None or send_at < self._send_at_ms:
            self._send_at_ms = send_at


def _build(broker_id: int, broker_epoch: int, batch: dict[PartitionKey, uuid.UUID]) -> Any:
    """The request, grouped by directory then topic (in a stable order)."""
    by_dir: dict[uuid.UUID, dict[uuid.UUID, list[int]]] = {}
    for (topic_id, partition_id), directory in batch.items():
        by_dir.setdefault(directory, {}).setdefault(topic_id, []).append(partition_id)
    return _REQUEST.AssignReplicasToDirsRequest(
        broker_id=i32(broker_id), broker_epoch=i64(broker_epoch),
        directories=tuple(
            _REQUEST.DirectoryData(id_=directory, topics=tuple(
                _REQUEST.TopicData(topic_id=topic_id, partitions=tuple(
                    _REQUEST.PartitionData(partition_index=i32(p)) for p in sorted(parts)))
                for topic_id, parts in sorted(topics.items(), key=lambda t: uuid_order(t[0]))))
            for directory, topics in sorted(by_dir.items(), key=lambda d: uuid_order(d[0]))))

