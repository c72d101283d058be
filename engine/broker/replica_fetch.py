"""Replica Fetch messages of the simulated broker: the follower's request (Kafka's
ReplicaFetcherThread) and the leader's per-partition answer (Kafka's ReplicaManager.fetchMessages).

The simulated brokers hold no message data: every log is empty, its end offset, high watermark
and log start offset are 0, so a follower's Fetch asks for offset 0 and gets no records back.

Kafka's facts used here (4.3.1 jars and the trunk source):

- The Fetch version a follower sends follows metadata.version
  (MetadataVersion.fetchRequestVersion): 13 before 3.5-IV0, 14 at 3.5-IV0, 15 from 3.5-IV1 (the
  first with ReplicaState), 16 from 3.7-IV4, 17 from 3.9-IV0, 18 from 4.1-IV1.
- A follower's request: replica.fetch.wait.max.ms (500) as max_wait, replica.fetch.min.bytes (1),
  replica.fetch.response.max.bytes (10 MiB), replica.fetch.max.bytes (1 MiB) per partition,
  READ_UNCOMMITTED, the partition's current leader epoch. Against a leader that creates no fetch
  session (ours answers session id 0) Kafka's FetchSessionHandler keeps sending full fetches with
  session id 0 and epoch 0 (INITIAL_EPOCH).
- The leader's per-partition errors, in its order: UNKNOWN_TOPIC_ID (topic id not in the
  metadata), UNKNOWN_TOPIC_OR_PARTITION, KAFKA_STORAGE_ERROR (the partition's log dir is
  offline), NOT_LEADER_OR_FOLLOWER (not the leader here, or the fetcher is not a replica),
  FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (the follower's epoch is older / newer). An error
  partition carries high watermark, last stable offset and log start offset -1 (Kafka's
  FetchResponse.partitionResponse) and, from v12, the current leader as the leader knows it.
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from engine.records.kio_codec import ErrorCode, i8, i32, i64, protocol_module

# Kafka's replica fetcher defaults (ReplicationConfigs)
FETCH_WAIT_MAX_MS = 500  # replica.fetch.wait.max.ms
FETCH_MIN_BYTES = 1  # replica.fetch.min.bytes
FETCH_RESPONSE_MAX_BYTES = 10 * 1024 * 1024  # replica.fetch.response.max.bytes
FETCH_MAX_BYTES = 1024 * 1024  # replica.fetch.max.bytes
INITIAL_SESSION_EPOCH = 0  # FetchMetadata.INITIAL_EPOCH: a full fetch asking for a session
INVALID_OFFSET = -1  # Kafka's INVALID_HIGH_WATERMARK / INVALID_LAST_STABLE_OFFSET / INVALID_LOG_START_OFFSET
LOWEST_FETCH_VERSION = 13  # the first with topic ids; every KRaft metadata.version (3.3+) sends at least this
HIGHEST_FETCH_VERSION = 18
_NO_THROTTLE = datetime.timedelta(0)

# (first metadata.version level, Fetch version): MetadataVersion.fetchRequestVersion in 4.3.1
_FETCH_VERSION_BY_LEVEL = ((27, 18), (21, 17), (19, 16), (10, 15), (9, 14), (0, 13))


def fetch_version(metadata_version_level: int | None) -> int:
    """The Fetch version a follower sends at this metadata.version (newest when unknown)."""
    if metadata_version_level is None:
        return HIGHEST_FETCH_VERSION
    return next(version for level, version in _FETCH_VERSION_BY_LEVEL if metadata_version_level >= level)


@dataclass(frozen=True, slots=True)
class FetchTarget:
    """One partition a follower fetches: its topic id, index and the leader epoch it knows."""

    topic_id: uuid.UUID
    partition: int
    leader_epoch: int


def replica_fetch_request(version: int, broker_id: int, broker_epoch: int, targets: Iterable[FetchTarget]) -> Any:
    """A follower's Fetch for ``targets`` (all from one leader), at offset 0 of an empty log."""
    module = protocol_module("fetch", version, "request")
    by_topic: dict[uuid.UUID, list[Any]] = {}
    for target in targets:
        by_topic.setdefault(target.topic_id, []).append(module.FetchPartition(
            partition=i32(target.partition), current_leader_epoch=i32(target.leader_epoch), fetch_offset=i64(0),
            last_fetched_epoch=i32(-1), log_start_offset=i64(0), partition_max_bytes=i32(FETCH_MAX_BYTES)))
    fields: dict[str, Any] = dict(
        max_wait=datetime.timedelta(milliseconds=FETCH_WAIT_MAX_MS), min_bytes=i32(FETCH_MIN_BYTES),
        max_bytes=i32(FETCH_RESPONSE_MAX_BYTES), isolation_level=i8(0), session_id=i32(0),
        session_epoch=i32(INITIAL_SESSION_EPOCH), forgotten_topics_data=(), rack_id="",
        topics=tuple(module.FetchTopic(topic_id=topic_id, partitions=tuple(parts))
                     for topic_id, parts in by_topic.items()))
    if version >= 15:  # KIP-903: the follower's broker epoch travels with its id
        fields["replica_state"] = module.ReplicaState(replica_id=i32(broker_id), replica_epoch=i64(broker_epoch))
    else:
        fields["replica_id"] = i32(broker_id)
    return module.FetchRequest(**fields)


def fetch_replica(request: Any) -> tuple[int, int]:
    """(replica id, replica epoch) of a Fetch: -1 for a consumer; epoch -1 before v15."""
    if request.__version__ >= 15:
        state = request.replica_state
        return int(state.replica_id), int(state.replica_epoch)
    return int(getattr(request, "replica_id", -1)), -1


def fetch_partitions(request: Any) -> list[tuple[Any, int, int]]:
    """(topic key, partition, current leader epoch) of each partition a Fetch names; the topic
    key is the topic id from v13 and the topic name before."""
    key = "topic_id" if request.__version__ >= 13 else "topic"
    return [(getattr(topic, key), int(p.partition), int(p.current_leader_epoch))
            for topic in request.topics for p in topic.partitions]


@dataclass(frozen=True, slots=True)
class PartitionAnswer:
    """The leader's answer for one partition: an error, or the empty log's offsets (all 0)."""

    topic_key: Any  # topic id (v13+) or name, as the request named it
    partition: int
    error: ErrorCode = ErrorCode.none
    leader_id: int = -1  # the current leader as this broker knows it (sent with an error, v12+)
    leader_epoch: int = -1


def fetch_response(request: Any, answers: Iterable[PartitionAnswer], error: ErrorCode = ErrorCode.none) -> Any:
    """The FetchResponse of ``request``'s version carrying ``answers`` (topics in request order)."""
    version = request.__version__
    module = protocol_module("fetch", version, "response")
    by_topic: dict[Any, list[Any]] = {}
    for answer in answers:
        by_topic.setdefault(answer.topic_key, []).append(_partition_data(module, version, answer))
    key = "topic_id" if version >= 13 else "topic"
    topics = tuple(module.FetchableTopicResponse(**{key: topic_key, "partitions": tuple(parts)})
                   for topic_key, parts in by_topic.items())
    fields: dict[str, Any] = dict(error_code=error, responses=topics)
    if version >= 1:
        fields["throttle_time"] = _NO_THROTTLE
    if version >= 7:
        fields["session_id"] = i32(0)  # no fetch session created: the follower keeps sending full fetches
    return module.FetchResponse(**fields)


def _partition_data(module: Any, version: int, answer: PartitionAnswer) -> Any:
    ok = answer.error == ErrorCode.none
    offset = i64(0 if ok else INVALID_OFFSET)
    fields: dict[str, Any] = dict(partition_index=i32(answer.partition), error_code=answer.error,
                                  high_watermark=offset, records=b"")
    if version >= 4:
        fields.update(last_stable_offset=offset, aborted_transactions=None)
    if version >= 5:
        fields["log_start_offset"] = offset
    if version >= 11:
        fields["preferred_read_replica"] = i32(-1)
    if version >= 12 and not ok and answer.leader_id >= 0:
        fields["current_leader"] = module.LeaderIdAndEpoch(leader_id=i32(answer.leader_id),
                                                           leader_epoch=i32(answer.leader_epoch))
    return module.PartitionData(**fields)


def response_errors(response: Any, version: int) -> dict[tuple[Any, int], ErrorCode]:
    """Each partition's error code in a FetchResponse, by (topic key, partition)."""
    key = "topic_id" if version >= 13 else "topic"
    return {(getattr(topic, key), int(p.partition_index)): p.error_code
            for topic in response.responses for p in topic.partitions}


# -- the follower's fetcher (Kafka's ReplicaFetcherManager + ReplicaFetcherThread, one per leader) --

FETCH_BACKOFF_MS = 1000  # replica.fetch.backoff.ms: after a failed fetch or a partition's error
FETCH_REQUEST_TIMEOUT_MS = 30000  # replica.socket.timeout.ms: an unanswered fetch is a failure


@dataclass(slots=True)
class _Followed:
    leader: int
    leader_epoch: int
    delayed_until_ms: int = 0  # after a partition error: left out of fetches until then
    fenced: bool = False  # FENCED_LEADER_EPOCH: out until the metadata brings a new leader epoch


@dataclass(slots=True)
class _Link:
    """The fetcher toward one leader broker: one Fetch in flight at most."""

    last_done_ms: int  # when the previous fetch ended (answered or failed)
    wait_ms: int  # the fetch interval after an answer, the backoff after a failure
    in_flight: Any = None
    sent_ms: int = 0


@dataclass(slots=True)
class FetcherCounters:
    fetches_sent: int = 0
    fetches_lost: int = 0  # dropped by the injected failure model, never sent
    fetch_failures: int = 0  # no answer, a wrong answer or a top-level error
    partition_errors: int = 0


class FollowerFetcher:
    """Which partitions this broker follows, from which leader, and when to fetch them.

    ``fetch_delay_ms`` (the lag knob) is added to every wait and read when the next fetch is due,
    so lowering it takes effect at once; a fetch lost by the failure model is retried after the
    fetch backoff, as Kafka's fetcher does after a failed fetch.
    """

    def __init__(self, interval_ms: int = FETCH_WAIT_MAX_MS, backoff_ms: int = FETCH_BACKOFF_MS) -> None:
        self.interval_ms = interval_ms
        self.backoff_ms = backoff_ms
        self.counters = FetcherCounters()
        self._followed: dict[tuple[uuid.UUID, int], _Followed] = {}
        self._links: dict[int, _Link] = {}

    def update(self, following: dict[tuple[uuid.UUID, int], tuple[int, int]], now_ms: int) -> None:
        """The partitions to follow now: (topic id, partition) -> (leader, leader epoch). A new leader
        or leader epoch starts the partition afresh (Kafka restarts its fetch)."""
        previous, self._followed = self._followed, {}
        for key, (leader, epoch) in following.items():
            old = previous.get(key)
            kept = old is not None and old.leader == leader and old.leader_epoch == epoch
            self._followed[key] = old if kept else _Followed(leader, epoch)
            if leader not in self._links:
                self._links[leader] = _Link(last_done_ms=now_ms, wait_ms=0)  # a new leader: fetch at once
        leaders = {f.leader for f in self._followed.values()}
        for leader in [lid for lid, link in self._links.items() if lid not in leaders and link.in_flight is None]:
            del self._links[leader]

    def following(self) -> dict[tuple[uuid.UUID, int], int]:
        """Each followed partition and its leader."""
        return {key: f.leader for key, f in self._followed.items()}

    def poll(self, now_ms: int, delay_ms: int, lost: Callable[[], bool], build: Callable[[list[FetchTarget]], Any]
             ) -> list[tuple[int, Any]]:
        """(leader id, Fetch) for each leader whose fetch is due; ``lost()`` draws the failure model."""
        out = []
        for leader, link in self._links.items():
            self._expire(link, now_ms)
            if link.in_flight is not None or now_ms < link.last_done_ms + link.wait_ms + delay_ms:
                continue
            targets = [FetchTarget(tid, p, f.leader_epoch) for (tid, p), f in sorted(self._followed.items())
                       if f.leader == leader and not f.fenced and f.delayed_until_ms <= now_ms]
            if not targets:
                continue
            if lost():
                self.counters.fetches_lost += 1
                link.last_done_ms, link.wait_ms = now_ms, self.backoff_ms
                continue
            link.in_flight, link.sent_ms = build(targets), now_ms
            self.counters.fetches_sent += 1
            out.append((leader, link.in_flight))
        return out

    def next_due_ms(self, now_ms: int, delay_ms: int) -> int | None:
        """When a fetch next falls due (or an unanswered one times out); None: nothing to fetch."""
        due = []
        for leader, link in self._links.items():
            if link.in_flight is not None:
                due.append(link.sent_ms + FETCH_REQUEST_TIMEOUT_MS)
                continue
            waits = [f.delayed_until_ms for f in self._followed.values() if f.leader == leader and not f.fenced]
            if waits:
                due.append(max(link.last_done_ms + link.wait_ms + delay_ms, min(waits)))
        return max(now_ms, min(due)) if due else None

    def handle_response(self, leader_id: int, request: Any, response: Any | None, now_ms: int) -> bool:
        """The leader's answer to ``request`` (None: failed); False if it is not the fetch in flight."""
        link = self._links.get(leader_id)
        if link is None or link.in_flight is None or link.in_flight is not request:
            return False
        link.in_flight = None
        link.last_done_ms = now_ms
        if type(response).__name__ != "FetchResponse" or response.error_code != ErrorCode.none:
            self.counters.fetch_failures += 1
            link.wait_ms = self.backoff_ms
            return True
        link.wait_ms = self.interval_ms
        for key, error in response_errors(response, request.__version__).items():
            followed = self._followed.get(key)
            if followed is None or followed.leader != leader_id or error == ErrorCode.none:
                continue
            self.counters.partition_errors += 1
            if error == ErrorCode.fenced_leader_epoch:
                followed.fenced = True  # our leader epoch is old: wait for the metadata
            else:
                followed.delayed_until_ms = now_ms + self.backoff_ms
        return True

    def _expire(self, link: _Link, now_ms: int) -> None:
        if link.in_flight is not None and now_ms >= link.sent_ms + FETCH_REQUEST_TIMEOUT_MS:
            link.in_flight = None
            self.counters.fetch_failures += 1
            link.last_done_ms, link.wait_ms = now_ms, self.backoff_ms
