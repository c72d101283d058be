"""The dashboard's rows, built from a frame: pure functions, cached where an image is big.

Images are immutable and a step shares every topic it did not touch with the image before
it, so per-topic results (partition rows, leadership counts) are cached by TopicImage object:
after a step that touches one partition, only its topic is recomputed. Neither images nor
topics can be weakly referenced or hashed (slots, mapping fields), so caches key on ``id()``
and hold the object itself, which keeps the id from being reused while the entry lives.
"""

from __future__ import annotations

import fnmatch
import re
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from itertools import chain
from operator import itemgetter
from typing import Any

from engine.common.kafka_uuid import ZERO_UUID, uuid_to_kafka
from engine.image.metadata_image import MetadataImage, TopicImage
from engine.image.metadata_loader import LoadInfo
from engine.image.metadata_version import version_name
from engine.image.partition_registration import LEADER_RECOVERY_RECOVERING
from engine.image.topic_sums import TopicSums
from metashell.dashboard.model import (
    ALL_FLAGS,
    FLAG_ISR_EMPTY_WITH_ELR,
    FLAG_LEADERLESS,
    FLAG_REASSIGNING,
    FLAG_UNCLEAN_RECOVERY,
    FLAG_UNDER_MIN_ISR,
    BrokerRow,
    Frame,
    HeaderInfo,
    PartitionRow,
    VoterRow,
)
from engine.image.metadata_image import min_isr
from metashell.tree.tree_layout import quorum_voters


def iso_utc(timestamp_ms: int) -> str:
    """``2026-01-01T00:00:07Z`` (milliseconds shown only when there are some); "-" for none."""
    if timestamp_ms < 0:
        return "-"
    moment = datetime.fromtimestamp(timestamp_ms / 1000, UTC)
    millis = timestamp_ms % 1000
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + (f".{millis:03d}Z" if millis else "Z")


# -- header and quorum -----------------------------------------------------------------------

def _node_state(frame: Frame, info: LoadInfo | None) -> LoadInfo | None:
    """quorum-state describes the node now: it stands in only for the history's last frame."""
    return info if info is not None and frame.offset >= frame.last_offset else None


def header_info(frame: Frame, info: LoadInfo | None) -> HeaderInfo:
    image = frame.image
    level = image.metadata_version
    leader = image.quorum.leader
    node = _node_state(frame, info)
    state = node.quorum_state if node is not None else None
    if leader is not None:
        leader_text = f"{leader.leader_id} (epoch {leader.epoch})"
    elif state is not None and state.leader_id >= 0:
        leader_text = f"{state.leader_id} (epoch {state.leader_epoch})"
    else:
        leader_text = "none"
    kraft = image.quorum.kraft_version
    if frame.offset < 0:  # nothing applied: no position, time or leader to speak of
        leader_text = ""
    position = position_text(frame.offset, frame.last_offset)
    return HeaderInfo(
        cluster_id=_cluster_id(info),
        metadata_version=f"{version_name(level)} ({level})" if level is not None else "-",
        features=tuple(sorted((k, v) for k, v in image.features.items()
                              if k not in ("metadata.version", "kraft.version"))),
        # no KRaftVersionRecord means kraft.version 0, once there is a cluster at all
        kraft_version=str(kraft) if kraft is not None else ("0" if level is not None else "-"),
        leader=leader_text,
        position=position,
        record_time=iso_utc(frame.timestamp_ms),
    )


def position_text(offset: int, last_offset: int) -> str:
    """``offset 120 / 340``; before any record is applied, ``before the first record · last 340``."""
    if offset < 0:
        return f"before the first record · last {last_offset}"
    return f"offset {offset} / {last_offset}"


def _cluster_id(info: LoadInfo | None) -> str:
    """meta.properties', else a v0 quorum-state's (which carried it), else "-"."""
    if info is None:
        return "-"
    if info.meta is not None and info.meta.cluster_id:
        return info.meta.cluster_id
    return info.quorum_state.cluster_id if info.quorum_state is not None and info.quorum_state.cluster_id else "-"


def voter_rows(frame: Frame, info: LoadInfo | None) -> list[VoterRow]:
    """The voters as the shell's /quorum/voters finds them (VotersRecord, else the last leader
    change, else quorum-state); offline, replication progress is unknown ("-")."""
    image = frame.image
    leader = image.quorum.leader
    state_info = _node_state(frame, info)
    leader_id = leader.leader_id if leader is not None else (
        state_info.quorum_state.leader_id if state_info is not None and state_info.quorum_state else -1)
    rows = []
    for voter_id, voter in sorted(quorum_voters(image, state_info).items()):
        endpoints = ", ".join(f"{e['name']}://{e['host']}:{e['port']}" for e in voter["endpoints"]) or "-"
        rows.append(VoterRow(voter_id, voter["directoryId"] or "-", endpoints,
                             "leader" if voter_id == leader_id else "voter"))
    return rows


def live_voter_rows(image: MetadataImage, quorum: Any, now_ms: int) -> list[VoterRow]:
    """The quorum as its leader tells it now (a DescribeQuorum answer, quorum_client.QuorumInfo):
    voters (controller-only nodes too), then observers, with their log end offset, lag behind
    the leader's, and how long ago they last fetched and were caught up. Endpoints from the
    answer's nodes, else the image's voters."""
    known = quorum_voters(image, None)
    leader_end = next((r.log_end_offset for r in quorum.voters if r.replica_id == quorum.leader_id), -1)
    rows = []
    for role, replicas in (("voter", quorum.voters), ("observer", quorum.observers)):
        for r in sorted(replicas, key=lambda r: r.replica_id):
            node = known.get(r.replica_id, {})
            listeners = quorum.nodes.get(r.replica_id) or \
                [(e["name"], e["host"], e["port"]) for e in node.get("endpoints", ())]
            directory = r.replica_directory_id
            lag = leader_end - r.log_end_offset if leader_end >= 0 and r.log_end_offset >= 0 else None
            rows.append(VoterRow(
                r.replica_id,
                uuid_to_kafka(directory) if directory not in (None, ZERO_UUID) else node.get("directoryId") or "-",
                ", ".join(f"{n}://{h}:{p}" for n, h, p in listeners) or "-",
                "leader" if r.replica_id == quorum.leader_id else role,
                str(r.log_end_offset) if r.log_end_offset >= 0 else "-", "-" if lag is None else str(lag),
                age(r.last_fetch_timestamp, now_ms), age(r.last_caught_up_timestamp, now_ms)))
    return rows


def live_state(status: Any, *, following: bool, offset: int, new_records: int,
               playing: float | None = None) -> tuple[str, str]:
    """The header's word on a live feed (an AttachStatus): (text, kind: live, paused or down).
    Away from the newest frame it says where the view is and what arrived meanwhile: ``⏸
    paused`` there, or ``▶ playing 2x`` while play mode (``playing``: its speed) moves it — one
    or the other, never both."""
    where = f"@{offset}" if offset >= 0 else "before the first record"
    moving = f"▶ playing {playing:g}x" if playing is not None else "⏸ paused"
    behind = f"{moving} {where}, +{new_records:,} new"
    if status.error:
        return f"✖ {status.error}" + ("" if following else f" · {behind}"), "down"
    if getattr(status, "catching_up", False):  # connecting, or fetching what was committed before attach
        return f"◌ {status.note}", "paused" if status.connected else "down"
    if not following:
        return behind + ("" if status.connected else f" · {status.note}"), "paused" if status.connected else "down"
    if not status.connected:
        return f"◌ {status.note}", "down"
    lag = f" · lag {status.lag:,}" if status.lag else ""
    return f"● live @{status.applied_offset}{lag} · {status.note}", "live"


def age(timestamp_ms: int, now_ms: int) -> str:
    """``1.2 s ago``; "-" for -1 (never, or not told)."""
    if timestamp_ms < 0:
        return "-"
    return f"{max(0, now_ms - timestamp_ms) / 1000:.1f} s ago"


def leader_history(image: MetadataImage) -> list[str]:
    """Newest first: ``offset 120  epoch 5  leader 3  2026-01-01T00:00:07Z``."""
    return [f"offset {c.offset}  epoch {c.epoch}  leader {c.leader_id}  {iso_utc(c.timestamp_ms)}"
            for c in reversed(image.quorum.leader_changes)]


# -- per-topic caches ----------------------------------------------------------------------------

class _PerTopic:
    """Values computed per TopicImage (and an extra key, e.g. min ISR), kept for the topics of the
    last two images asked about: the one shown and the one before it share most topics."""

    def __init__(self, compute: Callable[[TopicImage, Any], Any]):
        self._compute = compute
        self._current: dict[int, tuple] = {}
        self._previous: dict[int, tuple] = {}

    def get(self, topic: TopicImage, extra: Any = None) -> Any:
        key = id(topic)
        hit = self._current.get(key) or self._previous.get(key)
        if hit is None or hit[0] is not topic or hit[1] != extra:
            hit = (topic, extra, self._compute(topic, extra))
        self._current[key] = hit
        return hit[2]

    def new_generation(self) -> None:
        self._previous, self._current = self._current, {}


class _PerImage:
    """The last few images' results (LRU)."""

    def __init__(self, size: int = 4):
        self._size = size
        self._entries: OrderedDict[int, tuple] = OrderedDict()

    def get(self, image: MetadataImage, compute: Callable[[], Any]) -> Any:
        hit = self._entries.get(id(image))
        if hit is not None and hit[0] is image:
            self._entries.move_to_end(id(image))
            return hit[1]
        value = compute()
        self._entries[id(image)] = (image, value)
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)
        return value


_LEADER = itemgetter(4)  # PartitionRegistration.leader, for the C-speed Counter path
_REPLICAS = itemgetter(0)


def _topic_leadership(topic: TopicImage, _: Any) -> tuple[Counter, Counter]:
    partitions = topic.partitions.values()
    return Counter(map(_LEADER, partitions)), Counter(chain.from_iterable(map(_REPLICAS, partitions)))


def _fold_leadership(total: tuple[dict[int, int], dict[int, int]], value: tuple[Counter, Counter],
                     sign: int) -> tuple[dict[int, int], dict[int, int]]:
    for counts, topic_counts in zip(total, value):
        for broker, n in topic_counts.items():
            left = counts.get(broker, 0) + sign * n
            if left:
                counts[broker] = left
            else:
                del counts[broker]  # as a sum afresh, which has no broker of 0
    return total


# The total moves by the topics a step changed (engine.image.topic_sums); the result of the last
# few images is kept as handed out (a copy: the running total moves on)
_leadership_total = TopicSums(lambda topic: _topic_leadership(topic, None), _fold_leadership, lambda: ({}, {}),
                              lambda total: (dict(total[0]), dict(total[1])))
_leadership_by_image = _PerImage()


def leadership_counts(image: MetadataImage) -> tuple[dict[int, int], dict[int, int]]:
    """broker -> partitions it leads, broker -> replicas it hosts: per topic cached, the total
    moved by the topics changed since the last image asked about."""
    return _leadership_by_image.get(image, lambda: _leadership_total.total(image.topics.by_id))


def leadership_entries_of(topic: TopicImage) -> tuple[Counter, Counter]:
    """One topic's (leaders by broker, replicas by broker), without touching the cache: any thread."""
    return _topic_leadership(topic, None)


def seed_leadership(entries: dict[int, tuple]) -> None:
    """Entries (id(topic) -> (topic, leadership_entries_of(topic))) made elsewhere
    (metashell.dashboard.counting); on the main thread: the cache is not locked."""
    _leadership_total.seed(entries)


# -- brokers -----------------------------------------------------------------------------------

def broker_rows(image: MetadataImage, known_ids: Iterable[int] = (), *, counted: bool = True) -> list[BrokerRow]:
    """Registered brokers, plus ``known_ids`` no longer registered (History.known_broker_ids).
    ``counted`` False: the leaders and replicas each hosts are still being counted (None)."""
    if counted:
        leads, hosts = leadership_counts(image)
        led, hosted = (lambda broker_id: leads.get(broker_id, 0)), (lambda broker_id: hosts.get(broker_id, 0))
    else:
        led = hosted = lambda broker_id: None
    brokers = image.cluster.brokers
    rows = [BrokerRow(b.id, b.rack or "-", b.state, b.epoch,
                      uuid_to_kafka(b.incarnation_id) if b.incarnation_id else "-",
                      ", ".join(f"{e.name}://{e.host}:{e.port}" for e in b.endpoints) or "-",
                      led(b.id), hosted(b.id), len(b.cordoned_directories or ()))
            for b in brokers.values()]
    rows += [BrokerRow(broker_id, "-", "unregistered", -1, "-", "-", led(broker_id), hosted(broker_id))
             for broker_id in set(known_ids) - brokers.keys()]
    rows.sort(key=lambda r: r.broker_id)
    return rows


# -- partitions --------------------------------------------------------------------------------

def _topic_partition_rows(topic: TopicImage, needed: int) -> tuple[PartitionRow, ...]:
    """A topic's rows by partition id (tuple.__new__ skips the NamedTuple constructor's frame:
    the hot cost of a cold 100k-row table)."""
    new, name, rows = tuple.__new__, topic.name, []
    parts = topic.partitions
    for pid in sorted(parts):
        p = parts[pid]
        if p.leader < 0 or len(p.isr) < needed or p.adding_replicas or p.removing_replicas \
                or p.leader_recovery_state == LEADER_RECOVERY_RECOVERING or (p.elr and not p.isr):
            flags = partition_flags(p, needed)
        else:
            flags = ()
        rows.append(new(PartitionRow, (name, pid, p.leader, p.leader_epoch, p.replicas, p.isr, p.elr,
                                       p.last_known_elr, flags)))
    return tuple(rows)


def partition_flags(p: Any, needed: int) -> tuple[str, ...]:
    """The flags of one PartitionRegistration, in ALL_FLAGS order. ``needed``: its topic's
    min.insync.replicas (engine.image.metadata_image.min_isr, as the summary counts it)."""
    flags = []
    if p.leader < 0:
        flags.append(FLAG_LEADERLESS)
    if len(p.isr) < needed:
        flags.append(FLAG_UNDER_MIN_ISR)
    if not p.isr and p.elr:
        flags.append(FLAG_ISR_EMPTY_WITH_ELR)
    if p.adding_replicas or p.removing_replicas:
        flags.append(FLAG_REASSIGNING)
    if p.leader_recovery_state == LEADER_RECOVERY_RECOVERING:
        flags.append(FLAG_UNCLEAN_RECOVERY)
    return tuple(flags)


_rows_by_topic = _PerTopic(_topic_partition_rows)
_rows_by_image = _PerImage()


def topic_rows(image: MetadataImage, topic: TopicImage) -> tuple[PartitionRow, ...]:
    """One topic's rows (cached by topic object and its min.insync.replicas)."""
    return _rows_by_topic.get(topic, min_isr(image, topic.name))


def partition_rows(image: MetadataImage) -> list[PartitionRow]:
    """Every partition's row, sorted by (topic, partition)."""
    def compute() -> tuple[PartitionRow, ...]:
        _rows_by_topic.new_generation()
        topics = sorted(image.topics.by_id.values(), key=lambda t: t.name)
        return tuple(chain.from_iterable(topic_rows(image, topic) for topic in topics))
    return list(_rows_by_image.get(image, compute))


_SORT_KEYS: dict[str, Callable[[PartitionRow], Any]] = {
    "topic": lambda r: r.topic,
    "partition": lambda r: r.partition,
    "leader": lambda r: r.leader,
    "leader_epoch": lambda r: r.leader_epoch,
    "isr_size": lambda r: len(r.isr),
    "elr_size": lambda r: len(r.elr),
    "flags": lambda r: (len(r.flags), r.flags),
}
SORT_KEYS = tuple(_SORT_KEYS)


def filter_partitions(rows: Iterable[PartitionRow], topic_glob: str | None = None,
                      flag: str | None = None) -> list[PartitionRow]:
    """Rows whose topic matches ``topic_glob`` (fnmatch, case-sensitive) and that carry ``flag``."""
    if flag is not None and flag not in ALL_FLAGS:
        raise ValueError(f"unknown flag {flag!r} (known: {', '.join(ALL_FLAGS)})")
    matches = re.compile(fnmatch.translate(topic_glob)).match if topic_glob else None
    return [r for r in rows if (matches is None or matches(r.topic)) and (flag is None or flag in r.flags)]


def sort_partitions(rows: Iterable[PartitionRow], key: str, descending: bool = False) -> list[PartitionRow]:
    """Sorted by ``key`` (one of SORT_KEYS), ties by (topic, partition) ascending."""
    if key not in _SORT_KEYS:
        raise ValueError(f"unknown sort key {key!r} (known: {', '.join(SORT_KEYS)})")
    ordered = sorted(rows, key=lambda r: (r.topic, r.partition))
    if key != "topic" or descending:
        ordered.sort(key=_SORT_KEYS[key], reverse=descending)  # stable, also reversed: ties keep their order
    return ordered
