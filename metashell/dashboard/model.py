"""What the dashboard shows, as plain data: no Textual here.

The app is fed ``Frame``s — (offset, image, the records applied to reach it) — from a
``FrameSource``: a ``History`` (time travel over a log directory or a snapshot) or a live
source that grows as a controller quorum commits. Every panel is a pure function of a frame
(and, for the feed and the charts, of the source's events), so panels are tested without a
terminal and redrawn only when their rows change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple, Protocol, Sequence

from engine.storage.log_reader import LogEntry
from engine.image.metadata_image import MetadataImage

if TYPE_CHECKING:
    from engine.image.metadata_loader import LoadInfo
    from engine.admin.quorum_client import QuorumInfo
    from metashell.live.feed import AttachStatus

# Partition flags (short codes shown in the table; names for filters and help).
FLAG_LEADERLESS = "leaderless"
FLAG_UNDER_MIN_ISR = "under-min-isr"
FLAG_ISR_EMPTY_WITH_ELR = "isr-empty-elr"
FLAG_REASSIGNING = "reassigning"
FLAG_UNCLEAN_RECOVERY = "unclean-recovery"
ALL_FLAGS = (FLAG_LEADERLESS, FLAG_UNDER_MIN_ISR, FLAG_ISR_EMPTY_WITH_ELR, FLAG_REASSIGNING, FLAG_UNCLEAN_RECOVERY)

# Event kinds (the feed, and "next event of interest" when stepping).
EVENT_KINDS = ("fence", "unfence", "controlled-shutdown", "broker-register", "broker-unregister", "dirs-cordoned",
               "controller-unregister", "leader-change", "partition-leader", "isr-shrink",
               "isr-expand", "elr-change", "voter-change", "topic-create", "topic-delete")


@dataclass(frozen=True, slots=True)
class Frame:
    """The state at one point of history: after applying every record below ``offset``'s end."""

    offset: int  # the last record applied (-1: nothing yet)
    last_offset: int  # the last record the source holds
    image: MetadataImage
    changed: tuple[LogEntry, ...] = ()  # the records applied since the previous frame shown
    timestamp_ms: int = -1  # of the record at ``offset``


@dataclass(frozen=True, slots=True)
class Event:
    offset: int
    timestamp_ms: int
    kind: str  # one of EVENT_KINDS
    subject: str  # "broker 2", "orders-0", "voter 3", "topic orders"
    text: str  # one line for the feed: "broker 2 fenced", "orders-0 ISR [1,2,3] -> [1,3]"


class FrameSource(Protocol):
    """Where the dashboard's frames come from: a History over a file (which never grows) or a live
    source (metashell.dashboard.live_history: a History over metashell.source.LiveSource), which
    grows as records are committed.

    Growth: the screen calls ``poll()`` (on a timer, and when the ``wake`` given to ``watch``
    is called from the feed's thread); True means something changed: new frames
    (``generation`` moved), a new status or quorum. ``events`` and ``series()`` are the
    source's own lists, appended to as it grows; ``reshaped`` moves when they changed
    otherwise (cut at the front by the memory window, a reset, an event out of order), so a
    view over them knows to start over. Frame methods clamp to what is held; stepping methods
    return ``frame`` itself when they cannot move.
    """

    info: LoadInfo
    first_offset: int
    last_offset: int
    start_offset: int  # the starting image's offset (-1: the empty image)
    events: Sequence[Event]
    generation: int
    reshaped: int
    records_in: int  # records taken in since opening (a live source's "+K new" counts from it)
    live: AttachStatus | None  # None: a file
    quorum: QuorumInfo | None  # a live source's latest DescribeQuorum answer
    clock_ms: Callable[[], int]  # "now" (wall clock ms) for a live source's ages

    @property
    def grows(self) -> bool: ...

    @property
    def event_offsets(self) -> Sequence[int]: ...

    def poll(self) -> bool: ...

    def watch(self, wake: Callable[[], None]) -> None: ...

    def frame_at(self, offset: int, previous: Frame | None = None) -> Frame: ...

    def first(self, previous: Frame | None = None) -> Frame: ...

    def last(self, previous: Frame | None = None) -> Frame: ...

    def at_time(self, time_ms: int, previous: Frame | None = None) -> Frame: ...

    def frames(self) -> Iterator[Frame]: ...

    def step(self, frame: Frame, records: int) -> Frame: ...

    def next_batch(self, frame: Frame) -> Frame: ...

    def prev_batch(self, frame: Frame) -> Frame: ...

    def next_event(self, frame: Frame, kinds: set[str] | None = None) -> Frame: ...

    def prev_event(self, frame: Frame, kinds: set[str] | None = None) -> Frame: ...

    def events_between(self, low: int, high: int) -> list[Event]: ...

    def known_broker_ids(self, frame: Frame) -> frozenset[int]: ...

    def series(self) -> dict[str, list[tuple[int, float]]]: ...

    def time_span(self) -> tuple[int, int]: ...

    def offset_at_time(self, time_ms: int) -> int: ...


@dataclass(frozen=True, slots=True)
class HeaderInfo:
    cluster_id: str
    metadata_version: str  # "4.2-IV1 (27)" or "-"
    features: tuple[tuple[str, int], ...]  # other finalized features
    kraft_version: str  # "0", "1" or "-"
    leader: str  # "1 (epoch 5)" or "none"
    position: str  # "offset 120 / 340"
    record_time: str  # ISO-8601 UTC of the record shown, or "-"


@dataclass(frozen=True, slots=True)
class VoterRow:
    node_id: int
    directory_id: str  # Kafka base64, or "-"
    endpoint: str  # "CONTROLLER://host:9093" or "-"
    role: str  # "leader", "voter", "observer"
    log_end_offset: str = "-"
    lag: str = "-"
    last_fetch: str = "-"
    caught_up_age: str = "-"


@dataclass(frozen=True, slots=True)
class BrokerRow:
    broker_id: int
    rack: str
    state: str  # "active", "fenced", "controlled-shutdown", "unregistered"
    epoch: int
    incarnation: str
    endpoints: str
    leader_of: int | None  # partitions led (None: still being counted, metashell.dashboard.counting)
    replicas: int | None  # replicas hosted (the same)
    cordoned: int = 0  # log directories cordoned (KIP-1066, Kafka 4.3+)


class PartitionRow(NamedTuple):
    """A NamedTuple, not a dataclass: a cold table of 100,000 rows is built in one pass."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]
    flags: tuple[str, ...] = ()  # of ALL_FLAGS
