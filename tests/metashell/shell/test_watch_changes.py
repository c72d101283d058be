"""``watch`` and the live shell's refresh read change sets: a path is rendered again only when a
change set reaches it, a refreshed tree keeps the leadership maps a change set left as they were,
and ``LiveSource.changes_since`` says what the records since a mark changed (or that it cannot).

The source is the shell's real LiveSource and MetadataHistory; only its attachment (the socket
side) is a scripted stand-in with the attachment's surface, handing over real records. Which
paths a change set reaches (metashell.tree.tree_layout.shown_domains) is checked against the
rendered tree itself on random histories: a path it says is not reached renders the same.
"""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.image.change_set import EMPTY_CHANGE_SET
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i32
from engine.records.metadata_record_serde import ControlRecord
from engine.storage.log_reader import LogEntry
from metashell.source import live as source_module
from metashell.live.feed import AttachStatus, FeedUpdate
from metashell.shell import live_commands
from metashell.shell.session import Session
from metashell.source import LiveSource
from metashell.tree.nodes import NodeError, render, resolve
from metashell.tree.root import build_tree
from metashell.tree.tree_layout import reaches, shown_domains
from tests.engine.image.test_image_writer_property import TOPICS, _registration, _topic, records

STATUS = AttachStatus("127.0.0.1:9093", connected=True, leader_id=1, leader_epoch=1, note="following")
NOOP = m.NoOpRecordV0()


def _partition(pid: int, leader: int = 1, topic: int = 0) -> m.PartitionRecordV0:
    return m.PartitionRecordV0(partition_id=i32(pid), topic_id=TOPICS[topic], replicas=(i32(1), i32(2)),
                               isr=(i32(1), i32(2)), removing_replicas=(), adding_replicas=(), leader=i32(leader),
                               leader_epoch=i32(0), partition_epoch=i32(0))


def _broker(broker_id: int, fenced: bool) -> m.BrokerRegistrationChangeRecordV1:
    return m.BrokerRegistrationChangeRecordV1(broker_id=i32(broker_id), broker_epoch=5,
                                              fenced=i8(1 if fenced else -1), in_controlled_shutdown=i8(0))


class ScriptedAttachment:
    """The attachment's surface, handing over the start (the empty image and ``first``) at
    attach, then one scripted list of records per drain (one batch each)."""

    cluster_id = None

    def __init__(self, first: list, later: list[list], pending):
        self.pending = pending  # set after each drain, as on_update is while more is committed
        self.offset = 0
        self.first, self.later = self._batch(first), [self._batch(records) for records in later]
        self.status = STATUS

    def _batch(self, records: list) -> list[list[LogEntry]]:
        entries = [LogEntry(self.offset + n, 1, 1_000 + self.offset + n, r, isinstance(r, ControlRecord))
                   for n, r in enumerate(records)]
        self.offset += len(records)
        return [entries] if entries else []

    def start(self) -> None:
        pass

    def wait_caught_up(self, timeout_s: float) -> FeedUpdate:
        return FeedUpdate(STATUS, (MetadataImage(), -1), self.first)

    def drain(self) -> FeedUpdate:
        self.pending.set()
        return FeedUpdate(STATUS, None, self.later.pop(0) if self.later else [])

    def close(self) -> None:
        pass


def _live(first: list, later: list[list]) -> tuple[LiveSource, list[str]]:
    feed = ScriptedAttachment(first, later, None)
    source = LiveSource(feed)
    feed.pending = source.changed  # a wait returns at once
    return source, []


# offsets 0-5: brokers 1 (fenced) and 2 (unfenced), topic-0's partitions led by 1 and 2
START = [_registration(), dataclasses.replace(_registration(), broker_id=i32(2)), _broker(2, False),
         _topic(0), _partition(0), _partition(1, leader=2)]


def test_watch_renders_only_when_a_change_set_reaches_the_path(monkeypatch) -> None:
    # five drains before watch renders first (the load, the command's refresh and its load, watch's
    # poll and its load): offsets 6-10
    source, lines = _live(START, [[NOOP]] * 5 + [[_broker(2, True)], [NOOP, NOOP], [_broker(1, False)], [NOOP]])
    session = Session(source, out=lines.append)
    session.load()  # attached, as the shell is before its first command
    ticks = iter(range(1000))
    session.clock = lambda: next(ticks) * 0.001  # each look at the clock: a millisecond
    rendered: list[str] = []

    def counted(session: Session, path: str) -> list[str]:
        rendered.append(path)
        return watched_lines(session, path)
    watched_lines = live_commands._lines
    monkeypatch.setattr(live_commands, "_lines", counted)
    assert session.run_line("watch /brokers/1/state --count 2 --timeout-ms 500") == 0
    # (each wait's load takes one drain more: broker 1 changed at 14, shown with the NoOpRecord at 15)
    assert lines == ["==> /brokers/1/state @10 <==", "fenced", "==> /brokers/1/state @15 <==", "active"]
    assert len(rendered) == 3  # at the start, after broker 2 changed (a broker: it may show), after broker 1 did

    source, lines = _live(START, [[NOOP]] * 9)
    session = Session(source, out=lines.append)
    session.load()
    session.clock = lambda: next(ticks) * 0.001
    rendered.clear()
    assert session.run_line("watch /quorum/read-end-offset --count 3 --timeout-ms 500") == 0
    assert lines == ["==> /quorum/read-end-offset @10 <==", "11", "==> /quorum/read-end-offset @12 <==", "13",
                     "==> /quorum/read-end-offset @14 <==", "15"]  # the log's position: every commit reaches it


def test_refresh_keeps_the_leadership_a_change_set_left_alone() -> None:
    moved = m.PartitionChangeRecordV0(partition_id=i32(0), topic_id=TOPICS[0], leader=i32(2))
    # one drain for the load, then two for each refresh (its poll, and its load's)
    source, lines = _live(START, [[NOOP], [NOOP], [NOOP], [_broker(2, True)], [NOOP], [moved], [NOOP]])
    session = Session(source, out=lines.append)
    session.load()
    assert session.node("/brokers/1/leader-of").value() == ["topic-0-0"]
    leadership = session._tree._leadership
    assert session.refresh() and session._tree._leadership is leadership  # NoOpRecords
    assert session.refresh() and session._tree._leadership is leadership  # a broker fenced
    assert session.refresh() and session._tree._leadership is None  # a partition's leader moved
    assert session.node("/brokers/1/leader-of").value() == []
    assert session.node("/brokers/2/leader-of").value() == ["topic-0-0", "topic-0-1"]


def test_changes_since_a_mark(monkeypatch) -> None:
    source, _ = _live(START, [[_broker(2, True), NOOP], [NOOP] * 5])
    source.attach()
    mark = source.mark()
    assert mark == source_module.Mark(5, 0) and source.changes_since(mark) == EMPTY_CHANGE_SET
    source.poll()
    changes = source.changes_since(mark)
    assert list(changes.brokers) == [2] and changes.brokers[2].after.fenced and changes.brokers[2].offset == 6
    assert source.changes_since(None) is None
    monkeypatch.setattr(source_module, "CHANGES_MAX_RECORDS", 4)
    source.poll()
    assert source.changes_since(mark) is None  # 7 records since: more than it replays
    assert source.changes_since(source.mark()) == EMPTY_CHANGE_SET
    source.history.reset(MetadataImage(), 100)  # fetched anew: what the mark saw is gone
    assert source.changes_since(mark) is None


# -- which paths a change set reaches, checked against the rendered tree ---------------------------------

PATHS = ["/", "/brokers", "/brokers/1", "/brokers/1/state", "/brokers/1/leader-of", "/brokers/2/replica-of",
         "/controllers", "/topics", "/topics/topic-0", "/topics/topic-0/0", "/topics/topic-0/configs",
         "/topics/topic-0/configs/a", "/topics/topic-1/3", "/topic-ids", "/features", "/features/metadata.version",
         "/configs", "/configs/TOPIC/topic-0", "/configs/BROKER", "/client-quotas", "/acls", "/scram",
         "/delegation-tokens", "/producer-ids"]


def _shown(root, path: str) -> list[str]:
    try:
        node = resolve(root, path)
    except NodeError:
        return ["no such node"]
    if node.is_directory:
        return sorted(node.child_names())
    if path.endswith(("leader-of", "replica-of")):
        # in the image's order of topics, which a record that changes nothing can move: the same
        # partitions are the same answer (and a refreshed tree keeps the order it had)
        return sorted(node.value())
    return render(node.human_value()).splitlines()


# every subject the random records name exists first, so that most of them change something
FULL = [*(dataclasses.replace(_registration(), broker_id=i32(b)) for b in range(5)),
        *(_topic(t) for t in range(3)), *(_partition(p, topic=t) for t in range(3) for p in range(4)),
        *(m.ConfigRecordV0(resource_type=i8(kind), resource_name=name, name=key, value="1")
          for kind, name in ((2, "topic-0"), (4, "1"), (4, "")) for key in ("a", "b"))]


@settings(max_examples=300, deadline=None)
@given(st.lists(records, max_size=10), st.lists(records, min_size=1, max_size=4))
def test_a_path_no_change_set_reaches_renders_the_same(first, second) -> None:
    delta = MetadataDelta(MetadataImage())
    for record in [*FULL, *first]:
        delta.replay(record)
    before = delta.apply()
    delta = MetadataDelta(before)
    for offset, record in enumerate(second):
        delta.replay(record, offset)
    changes, after = delta.changes(), delta.apply()
    old, new = build_tree(before), build_tree(after)
    for path in PATHS:
        assert shown_domains(path) is not None
        if not reaches(changes, path):
            assert _shown(old, path) == _shown(new, path), path


def test_paths_that_show_more_than_a_change_set_are_always_reached() -> None:
    for path in ("/local/end-offset", "/quorum/read-end-offset", "/metrics", "/image/cluster"):
        assert shown_domains(path) is None and reaches(EMPTY_CHANGE_SET, path)
    assert not reaches(EMPTY_CHANGE_SET, "/topics") and reaches(None, "/topics")
