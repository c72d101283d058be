"""The dashboard's data: History (frames, stepping, events, series) and the panels' rows.

The demo history (metashell.demo.shell_demo, written by the controller): offsets 0 leader change
(leader 1) | 1-3 bootstrap (metadata.version) | 4-6 brokers 1-3 register fenced | 7-9 unfence |
10-13 topic orders (3 partitions, ISR all three) | 14 NoOp | 15-17 ISRs shrink to [1,3] (orders-1's
leader 2 -> 3), 18 fence 2 | 19 leader change (leader 3) | 20 unfence 2 | 21, 22-23 ISRs expand.
One batch a second from 2026-01-01T00:00:00Z.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from pathlib import Path

import pytest

from engine.records import kio_codec as kio
from engine.records import metadata_records as m
from engine.bench.replay import partition_heavy_records
from engine.records.kio_codec import i8, i16, i32, i64, u16
from engine.storage.log_reader import LogEntry
from engine.image.metadata_delta import MetadataDelta
from engine.image import history_checkpoints
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import LoadInfo, load_log_dir
from engine.records.metadata_record_serde import ControlRecord, control_record
from engine.storage.snapshot_writer import SnapshotId, write_snapshot
from metashell.dashboard import history as history_module
from metashell.dashboard import model, panels
from metashell.dashboard.events import events_of_changes
from metashell.dashboard.history import History
from metashell.dashboard.model import FLAG_LEADERLESS as LEADERLESS
from metashell.dashboard.model import FLAG_UNDER_MIN_ISR as UNDER_MIN
from metashell.demo.shell_demo import START_MS, write_demo_log_dir
from tests.broker_records import broker_fencing as _fence, broker_registration as _broker
from metashell.shell.summary import summarize
from tests.conftest import CORPUS, corpus_params

T1 = uuid.UUID(int=0xA1)
T2 = uuid.UUID(int=0xB2)


@pytest.fixture
def demo(demo_log_dir: Path) -> History:
    return History.open_log_dir(demo_log_dir)


def _partition(topic_id, pid, replicas=(1, 2, 3), isr=None, leader=None, elr=None, last_known=None,
               adding=(), removing=(), recovery=0):
    isr = replicas if isr is None else isr
    return m.PartitionRecordV2(
        partition_id=i32(pid), topic_id=topic_id, replicas=tuple(map(i32, replicas)), isr=tuple(map(i32, isr)),
        removing_replicas=tuple(map(i32, removing)), adding_replicas=tuple(map(i32, adding)),
        leader=i32(replicas[0] if leader is None else leader), leader_recovery_state=i8(recovery),
        leader_epoch=i32(0), partition_epoch=i32(0), directories=(None,) * len(replicas),
        eligible_leader_replicas=None if elr is None else tuple(map(i32, elr)),
        last_known_elr=None if last_known is None else tuple(map(i32, last_known)))


def _change(topic_id, pid, **fields):
    converted = {k: (tuple(map(i32, v)) if isinstance(v, tuple) else i32(v)) for k, v in fields.items()}
    return m.PartitionChangeRecordV2(partition_id=i32(pid), topic_id=topic_id, **converted)


def _config(topic: str, key: str, value: str | None, resource_type: int = 2):
    return m.ConfigRecordV0(resource_type=i8(resource_type), resource_name=topic, name=key, value=value)


def _entries(records, first_offset: int = 0, ts: int = START_MS) -> list[LogEntry]:
    return [LogEntry(first_offset + n, 1, ts, r, isinstance(r, ControlRecord)) for n, r in enumerate(records)]


def _apply(image: MetadataImage, entries: list[LogEntry]) -> MetadataImage:
    delta = MetadataDelta(image)
    for entry in entries:
        delta.replay(entry.record, entry.offset, entry.leader_epoch, entry.timestamp_ms)
    return delta.apply()


def _events_of_batch(image: MetadataImage, entries: list[LogEntry]) -> list:
    """The events of ``entries`` replayed as one batch onto ``image``, from the delta's change set."""
    delta = MetadataDelta(image)
    for entry in entries:
        delta.replay(entry.record, entry.offset, entry.leader_epoch, entry.timestamp_ms)
    return events_of_changes(delta.changes(), delta.apply())


def _image(records) -> MetadataImage:
    return _apply(MetadataImage(), _entries(records))


def _history(batches) -> History:
    out, offset = [], 0
    for n, records in enumerate(batches):
        out.append(_entries(records, offset, START_MS + n * 1000))
        offset += len(records)
    return History(LoadInfo(Path("memory")), MetadataImage(), out, -1)


def test_demo_bounds_and_frames_at_chosen_offsets(demo: History) -> None:
    assert (demo.start_offset, demo.first_offset, demo.last_offset) == (-1, 0, 23)
    assert demo.batch_starts == [0, 1, 4, 7, 10, 14, 15, 19, 20, 21, 22]
    assert len(demo.entries) == 24 and demo.info.end_offset == 24 and demo.info.first_offset == 0
    brokers = lambda offset: {b: r.state for b, r in demo.frame_at(offset).image.cluster.brokers.items()}
    assert brokers(17)[2] == "active" and brokers(18)[2] == "fenced" and brokers(20)[2] == "active"
    isr = lambda offset, pid: demo.frame_at(offset).image.topics.topic("orders").partitions[pid].isr
    assert isr(14, 0) == (1, 2, 3) and isr(15, 0) == (1, 3) and isr(21, 0) == (1, 3, 2)
    leader = lambda offset: demo.frame_at(offset).image.quorum.leader.leader_id
    assert leader(0) == 1 and leader(18) == 1 and leader(19) == 3
    start = demo.frame_at(-5)
    assert (start.offset, start.timestamp_ms, start.image.cluster.brokers) == (-1, -1, {})
    end = demo.frame_at(10**9)
    assert (end.offset, end.last_offset, end.timestamp_ms) == (23, 23, START_MS + 10000)
    assert demo.frame_at(13).image is demo.frame_at(13).image  # recent frames are kept


def test_changed_entries_between_frames(demo: History, monkeypatch) -> None:
    at_14 = demo.frame_at(14)
    assert at_14.changed == ()  # nothing shown before
    forward = demo.frame_at(18, at_14)
    assert [e.offset for e in forward.changed] == [15, 16, 17, 18]
    backward = demo.frame_at(14, forward)
    assert [e.offset for e in backward.changed] == [15, 16, 17, 18]
    monkeypatch.setattr(history_module, "CHANGED_CAP", 3)
    assert [e.offset for e in demo.frame_at(23, demo.first()).changed] == [21, 22, 23]


def test_stepping_records_batches_events_and_bounds(demo: History) -> None:
    first, last = demo.first(), demo.last()
    assert first.offset == -1 and last.offset == 23
    assert demo.step(first, 1).offset == 0 and demo.step(demo.frame_at(18), -2).offset == 16
    assert demo.step(first, -1) is first and demo.step(last, 5) is last
    assert demo.step(last, -100).offset == -1 and demo.step(first, 100).offset == 23
    assert demo.next_batch(first).offset == 0 and demo.next_batch(demo.frame_at(15)).offset == 18
    assert demo.next_batch(demo.frame_at(18)).offset == 19 and demo.next_batch(last) is last
    assert demo.prev_batch(demo.frame_at(18)).offset == 14 and demo.prev_batch(demo.frame_at(16)).offset == 14
    assert demo.prev_batch(demo.frame_at(0)).offset == -1 and demo.prev_batch(first) is first
    assert demo.next_event(demo.frame_at(14)).offset == 15
    assert demo.next_event(demo.frame_at(14), {"isr-expand"}).offset == 21
    assert demo.next_event(demo.frame_at(18), {"fence"}).offset == 18  # none after: no move
    assert demo.prev_event(last, {"leader-change"}).offset == 19
    assert demo.prev_event(demo.frame_at(19), {"leader-change"}).offset == 0
    assert demo.prev_event(demo.frame_at(0)).offset == 0 and demo.next_event(last) is last
    stepped = demo.next_event(demo.frame_at(17), {"fence"})
    assert [e.offset for e in stepped.changed] == [18]


def test_frames_replayed_from_sparse_checkpoints(tmp_path: Path, monkeypatch, demo: History) -> None:
    monkeypatch.setattr(history_checkpoints, "CHECKPOINT_RECORDS", 5)
    monkeypatch.setattr(history_checkpoints, "CHEAP_BATCH_IMAGE", -1)  # keep no batch-end image
    sparse = History.open_log_dir(write_demo_log_dir(tmp_path))
    assert len(sparse.replay.checkpoints) < len(demo.replay.checkpoints)
    for offset in range(-1, 24):
        assert sparse.frame_at(offset).image == demo.frame_at(offset).image
    assert [f.image for f in sparse.frames()] == [f.image for f in demo.frames()]
    assert sparse.series() == demo.series() and sparse.events == demo.events


def test_at_time_and_frames_in_batches(demo: History) -> None:
    assert demo.at_time(START_MS + 6000).offset == 18
    assert demo.at_time(START_MS + 6999).offset == 18
    assert demo.at_time(START_MS - 1).offset == -1 and demo.at_time(START_MS + 10**6).offset == 23
    frames = list(demo.frames())
    assert [f.offset for f in frames] == [-1, 0, 3, 6, 9, 13, 14, 18, 19, 20, 21, 23]
    assert [[e.offset for e in f.changed] for f in frames[5:8]] == [[10, 11, 12, 13], [14], [15, 16, 17, 18]]
    assert frames[-1].image.topics.topic("orders").partitions[0].isr == (1, 3, 2)


def test_events_of_the_demo(demo: History) -> None:
    summary = [(e.offset, e.kind, e.subject) for e in demo.events]
    assert summary == [
        (0, "leader-change", "quorum"),
        (4, "broker-register", "broker 1"), (5, "broker-register", "broker 2"), (6, "broker-register", "broker 3"),
        (7, "unfence", "broker 1"), (8, "unfence", "broker 2"), (9, "unfence", "broker 3"),
        (10, "topic-create", "topic orders"),
        (15, "isr-shrink", "orders-0"),
        (16, "partition-leader", "orders-1"), (16, "isr-shrink", "orders-1"), (17, "isr-shrink", "orders-2"),
        (18, "fence", "broker 2"),
        (19, "leader-change", "quorum"),
        (20, "unfence", "broker 2"), (21, "isr-expand", "orders-0"), (22, "isr-expand", "orders-1"),
        (23, "isr-expand", "orders-2")]
    texts = {e.offset: e.text for e in demo.events}
    assert texts[18] == "broker 2 fenced" and texts[15] == "orders-0 ISR [1, 2, 3] → [1, 3]"
    assert texts[19] == "quorum leader 3 (epoch 2)" and texts[10] == "topic orders created (3 partitions)"
    assert demo.events[0].timestamp_ms == START_MS and texts[22] == "orders-1 ISR [3, 1] → [3, 1, 2]"
    assert [e.offset for e in demo.events_between(15, 17)] == [15, 16, 16, 17]


def test_series_shapes(demo: History) -> None:
    series = demo.series()
    assert set(series) == {"records_per_s", "fenced_brokers", "under_min_isr"}
    assert series["records_per_s"] == [(START_MS + n * 1000, float(c))
                                       for n, c in enumerate((1, 3, 3, 3, 4, 1, 4, 1, 1, 1, 2))]
    assert series["fenced_brokers"] == [(-1, 0.0), (6, 3.0), (9, 0.0), (18, 1.0), (20, 0.0)]
    assert series["under_min_isr"] == [(-1, 0.0)]  # min ISR 1: never under


def test_under_min_isr_series_is_kept_incrementally() -> None:
    h = _history([
        [m.TopicRecordV0(name="orders", topic_id=T1), _config("orders", "min.insync.replicas", "2"),
         _partition(T1, 0), _partition(T1, 1)],
        [_change(T1, 0, isr=(1,))],  # offset 4: under
        [_change(T1, 1, isr=(2,))],  # 5: two under
        [_config("orders", "min.insync.replicas", "1")],  # 6: none under
        [_config("", "min.insync.replicas", "3", resource_type=4), _config("orders", "min.insync.replicas", None)],
        [m.RemoveTopicRecordV0(topic_id=T1)],  # 9
    ])
    assert h.series()["under_min_isr"] == [(-1, 0.0), (4, 1.0), (5, 2.0), (6, 0.0), (8, 2.0), (9, 0.0)]
    assert h.frame_at(8).image.configs[(4, "")]["min.insync.replicas"] == "3"


def test_transaction_across_batches() -> None:
    h = _history([
        [m.BeginTransactionRecordV0(name="create")],
        [m.TopicRecordV0(name="big", topic_id=T2), _partition(T2, 0)],
        [_partition(T2, 1), m.EndTransactionRecordV0()],
    ])
    assert h.frame_at(2).image.topics.topic("big") is None  # not committed yet
    assert h.frame_at(3).image.topics.topic("big") is None
    assert len(h.last().image.topics.topic("big").partitions) == 2
    assert len(h.step(h.frame_at(1), 3).image.topics.topic("big").partitions) == 2
    assert [(e.kind, e.subject) for e in h.events] == [("topic-create", "topic big")]


def test_events_of_a_transaction_with_a_clear_elr_are_at_its_end() -> None:
    voters = tuple(kio.LeaderChangeVoter(voter_id=i32(v)) for v in (1, 2, 3))
    leader = control_record(kio.LeaderChangeMessage(version=i16(0), leader_id=i32(2), voters=voters,
                                                    granting_voters=voters))
    h = _history([
        [m.TopicRecordV0(name="pay", topic_id=T1), _partition(T1, 0, isr=(1,), elr=(2,), last_known=(3,)),
         _partition(T1, 1), m.TopicRecordV0(name="new", topic_id=T2), _partition(T2, 0, elr=(2,))],  # 0-4
        [m.BeginTransactionRecordV0(name="t"), _change(T1, 1, leader=2)],  # 5-6: held ...
        [leader, m.ClearElrRecordV0(topic_name=""), m.EndTransactionRecordV0()],  # 7 at once, 8-9: ... to the end
    ])
    assert [(e.offset, e.timestamp_ms, e.kind, e.text) for e in h.events] == [
        (0, START_MS, "topic-create", "topic pay created (2 partitions)"),
        (3, START_MS, "topic-create", "topic new created (1 partition)"),
        (7, START_MS + 2000, "leader-change", "quorum leader 2 (epoch 1)"),
        # a transaction's records take effect at its end, and so do their events: where a frame shows them
        (9, START_MS + 2000, "partition-leader", "pay-1 leader 1 → 2 (epoch 1)"),
        (9, START_MS + 2000, "elr-change", "pay-0 ELR [2] → [], last-known ELR [3] → []"),
        (9, START_MS + 2000, "elr-change", "new-0 ELR [2] → []")]
    assert h.frame_at(8).image.topics.topic("pay").partitions[1].leader == 1
    assert h.frame_at(9).image.topics.topic("pay").partitions[1].leader == 2


def test_snapshot_source_is_one_frame(tmp_path: Path) -> None:
    records = [m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(27)),
               m.TopicRecordV0(name="orders", topic_id=T1), _partition(T1, 0)]
    path = write_snapshot(tmp_path, SnapshotId(42, 3), records, last_contained_log_timestamp_ms=START_MS,
                          now_ms=START_MS, fsync=False)
    h = History.open_snapshot(path)
    frame = h.last()
    assert (h.first_offset, h.last_offset, frame.offset, frame.timestamp_ms) == (41, 41, 41, START_MS)
    assert h.events == [] and h.batch_starts == [] and [f.offset for f in h.frames()] == [41]
    assert h.step(frame, 1) is frame and h.next_batch(frame) is frame and h.prev_event(frame) is frame
    assert h.frame_at(0).image is frame.image and len(panels.partition_rows(frame.image)) == 1
    assert panels.header_info(frame, h.info).position == "offset 41 / 41"


def test_a_segment_opens_as_one_frame_too(demo_log_dir: Path) -> None:
    """``dash --snapshot`` takes a segment as ``metashell --snapshot`` does: replayed from its
    first batch (metadata_loader.load_file), not refused for lacking a SnapshotHeader."""
    from engine.image.metadata_loader import load_file

    (segment,) = sorted((demo_log_dir / "__cluster_metadata-0").glob("*.log"))
    h = History.open_snapshot(segment)
    image, info = load_file(segment)
    assert h.last().image == image and h.last_offset == info.end_offset - 1 > 0
    assert len(panels.partition_rows(h.last().image)) == len(panels.partition_rows(image)) > 0


def test_events_of_crafted_batches() -> None:
    before = _image([_broker(1), _broker(2), m.TopicRecordV0(name="pay", topic_id=T1),
                     _partition(T1, 0, replicas=(1, 2, 3), isr=(1, 2)), _partition(T1, 1)])
    versions = kio.KRaftVersionFeature(min_supported_version=i16(0), max_supported_version=i16(1))
    voters = control_record(kio.VotersRecord(version=i16(0), voters=tuple(kio.VotersVoter(
        voter_id=i32(v), voter_directory_id=None, k_raft_version_feature=versions,
        endpoints=(kio.VotersEndpoint(name="CONTROLLER", host=f"c{v}", port=u16(9093)),)) for v in (1, 2))))
    batch = _entries([
        m.BrokerRegistrationChangeRecordV1(broker_id=i32(1), broker_epoch=i64(11), in_controlled_shutdown=i8(1)),
        m.UnregisterBrokerRecordV0(broker_id=i32(2), broker_epoch=i64(12)),
        _change(T1, 0, isr=(), leader=-1, eligible_leader_replicas=(1, 2), last_known_elr=(1,)),
        _change(T1, 1, leader=2),
        voters,
        m.TopicRecordV0(name="new", topic_id=T2),
    ], first_offset=100)
    after = _apply(before, batch)
    events = _events_of_batch(before, batch)
    assert [(e.offset, e.kind, e.text) for e in events] == [
        (100, "controlled-shutdown", "broker 1 in controlled shutdown"),
        (101, "broker-unregister", "broker 2 unregistered"),
        (102, "partition-leader", "pay-0 leader 1 → none (epoch 1)"),
        (102, "isr-shrink", "pay-0 ISR [1, 2] → []"),
        (102, "elr-change", "pay-0 ELR [] → [1, 2], last-known ELR [] → [1]"),
        (103, "partition-leader", "pay-1 leader 1 → 2 (epoch 1)"),
        (104, "voter-change", "voters [1, 2]"),
        (105, "topic-create", "topic new created (0 partitions)")]
    gone = _entries([m.RemoveTopicRecordV0(topic_id=T1), m.ClearElrRecordV0(topic_name="")], first_offset=200)
    assert [(e.kind, e.text) for e in _events_of_batch(after, gone)] == [
        ("topic-delete", "topic pay deleted")]


def test_header_voters_and_leader_history(demo: History) -> None:
    last = demo.last()
    header = panels.header_info(last, demo.info)
    assert (header.cluster_id, header.metadata_version, header.kraft_version) == ("-", "4.1-IV1 (27)", "0")
    assert (header.leader, header.position, header.record_time) == \
        ("3 (epoch 2)", "offset 23 / 23", "2026-01-01T00:00:10Z")
    empty = panels.header_info(demo.first(), demo.info)
    # before the first record: no offset -1, no "quorum leader none" (the header leaves them out)
    assert (empty.metadata_version, empty.kraft_version, empty.leader, empty.record_time) == ("-", "-", "", "-")
    assert empty.position == "before the first record · last 23"
    leaderless = panels.header_info(demo.frame_at(1), demo.info)  # a record applied, still no leader known
    assert leaderless.position == "offset 1 / 23"
    assert [(v.node_id, v.role, v.directory_id, v.lag) for v in panels.voter_rows(last, demo.info)] == \
        [(1, "voter", "-", "-"), (2, "voter", "-", "-"), (3, "leader", "-", "-")]
    assert panels.voter_rows(demo.first(), demo.info) == []
    assert panels.leader_history(last.image) == ["offset 19  epoch 2  leader 3  2026-01-01T00:00:07Z",
                                                 "offset 0  epoch 1  leader 1  2026-01-01T00:00:00Z"]
    assert panels.iso_utc(START_MS + 7250) == "2026-01-01T00:00:07.250Z"


def test_broker_rows(demo: History) -> None:
    frame = demo.frame_at(18)
    rows = panels.broker_rows(frame.image, demo.known_broker_ids(frame))
    assert [(r.broker_id, r.state, r.leader_of, r.replicas, r.rack) for r in rows] == \
        [(1, "active", 1, 3, "rack-1"), (2, "fenced", 0, 3, "rack-0"), (3, "active", 2, 3, "rack-1")]
    assert rows[0].endpoints == "PLAINTEXT://broker-1:9092" and rows[0].epoch == 4  # its registration's offset
    assert demo.known_broker_ids(demo.frame_at(5)) == {1, 2}
    gone = panels.broker_rows(frame.image, [7, 2])
    assert (gone[-1].broker_id, gone[-1].state, gone[-1].epoch) == (7, "unregistered", -1)
    assert panels.broker_rows(MetadataImage()) == []
    shutting = _image([_broker(4), _fence(4, False), m.BrokerRegistrationChangeRecordV1(
        broker_id=i32(4), broker_epoch=i64(14), in_controlled_shutdown=i8(1))])
    assert [r.state for r in panels.broker_rows(shutting)] == ["controlled-shutdown"]


def test_partition_flags() -> None:
    image = _image([
        m.TopicRecordV0(name="a", topic_id=T1), _config("a", "min.insync.replicas", "2"),
        _partition(T1, 0),
        _partition(T1, 1, leader=-1),
        _partition(T1, 2, isr=(1,)),
        _partition(T1, 3, isr=(), leader=-1, elr=(2,), last_known=(1,)),
        _partition(T1, 4, replicas=(1, 2, 3, 4), adding=(4,), removing=(1,)),
        _partition(T1, 5, isr=(1,), recovery=1),
        m.TopicRecordV0(name="b", topic_id=T2), _partition(T2, 0, isr=(1,)),  # min ISR 1: fine
    ])
    flags = {(r.topic, r.partition): r.flags for r in panels.partition_rows(image)}
    assert flags == {
        ("a", 0): (), ("a", 1): (LEADERLESS,), ("a", 2): (UNDER_MIN,),
        ("a", 3): (LEADERLESS, UNDER_MIN, model.FLAG_ISR_EMPTY_WITH_ELR),
        ("a", 4): (model.FLAG_REASSIGNING,), ("a", 5): (UNDER_MIN, model.FLAG_UNCLEAN_RECOVERY),
        ("b", 0): ()}
    row = panels.partition_rows(image)[3]
    assert (row.leader, row.isr, row.elr, row.last_known_elr, row.replicas) == (-1, (), (2,), (1,), (1, 2, 3))
    assert panels.partition_rows(MetadataImage()) == []
    # min.insync.replicas is part of the cache key: a config change re-flags an unchanged topic
    assert panels.partition_rows(_apply(image, _entries([_config("a", "min.insync.replicas", "1")])))[2].flags == ()


def test_filter_and_sort_partitions() -> None:
    image = _image([
        m.TopicRecordV0(name="orders", topic_id=T1), m.TopicRecordV0(name="audit", topic_id=T2),
        _partition(T1, 0, isr=(1, 2)), _partition(T1, 1, leader=-1), _partition(T1, 2, leader=3),
        _partition(T2, 0, isr=(2,), leader=2), _partition(T2, 1, elr=(3,), isr=(1, 2)),
    ])
    rows = panels.partition_rows(image)
    assert [(r.topic, r.partition) for r in rows] == [("audit", 0), ("audit", 1), ("orders", 0), ("orders", 1),
                                                      ("orders", 2)]
    assert [r.partition for r in panels.filter_partitions(rows, "ord*", None)] == [0, 1, 2]
    assert [(r.topic, r.partition) for r in panels.filter_partitions(rows, None, LEADERLESS)] == \
        [("orders", 1)]
    assert panels.filter_partitions(rows, "x*", None) == [] and len(panels.filter_partitions(rows, None, None)) == 5
    key = lambda rs: [(r.topic, r.partition) for r in rs]
    assert key(panels.sort_partitions(rows, "leader", False)) == \
        [("orders", 1), ("audit", 1), ("orders", 0), ("audit", 0), ("orders", 2)]
    assert key(panels.sort_partitions(rows, "isr_size", True))[:2] == [("orders", 1), ("orders", 2)]
    assert key(panels.sort_partitions(rows, "topic", True)) == [("orders", 0), ("orders", 1), ("orders", 2),
                                                                ("audit", 0), ("audit", 1)]
    assert key(panels.sort_partitions(rows, "partition", False))[:2] == [("audit", 0), ("orders", 0)]
    assert key(panels.sort_partitions(rows, "elr_size", True))[0] == ("audit", 1)
    assert key(panels.sort_partitions(rows, "flags", True))[0] == ("orders", 1)
    assert panels.sort_partitions(rows, "leader_epoch", False)[0].leader_epoch == 0
    with pytest.raises(ValueError):
        panels.sort_partitions(rows, "nope", False)
    with pytest.raises(ValueError):
        panels.filter_partitions(rows, None, "nope")


@pytest.mark.slow
def test_hundred_thousand_partitions_reuse_untouched_topics() -> None:
    image = _image(partition_heavy_records(100_000))
    rows = panels.partition_rows(image)
    assert len(rows) == 100_000 and rows[0].topic == "topic-00000" and rows[-1].topic == "topic-00999"
    topics = image.topics
    changed_id, other_id = topics.by_name["topic-00005"], topics.by_name["topic-00700"]
    stepped = _apply(image, _entries([_change(changed_id, 3, isr=(1,), leader=1)]))
    rows2 = panels.partition_rows(stepped)
    assert len(rows2) == 100_000
    other_before = panels.topic_rows(image, topics.by_id[other_id])
    assert panels.topic_rows(stepped, stepped.topics.by_id[other_id]) is other_before  # cached, not rebuilt
    assert panels.topic_rows(stepped, stepped.topics.by_id[changed_id]) is not \
        panels.topic_rows(image, topics.by_id[changed_id])
    assert rows2[503].isr == (1,) and rows2[503].leader == 1 and rows[503] is not rows2[503]
    assert rows2[70_000] is rows[70_000]
    leads, hosts = panels.leadership_counts(stepped)
    assert sum(hosts.values()) == 300_000 and sum(leads.values()) == 100_000


def _summary_numbers(lines: list[str]) -> dict[str, str]:
    return {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in lines)}


CORPUS_DIRS = sorted(str(p.parent.relative_to(CORPUS)) for p in CORPUS.glob("**/__cluster_metadata-0")) \
    if CORPUS.is_dir() else []


@pytest.mark.parametrize("node", corpus_params(CORPUS_DIRS), ids=lambda n: n or "no-corpus")
@pytest.mark.slow
def test_corpus_history_agrees_with_summary(node: str) -> None:
    h = History.open_log_dir(CORPUS / node)
    frame = h.last()
    image = frame.image
    numbers = _summary_numbers(summarize(image, h.info))
    brokers = panels.broker_rows(image)
    count, states = re.fullmatch(r"(\d+) \((.*)\)", numbers["brokers"]).groups()
    assert len(brokers) == int(count)
    assert Counter(r.state for r in brokers) == ({s: int(n) for n, s in (p.split(" ", 1) for p in states.split(", "))}
                                                 if states != "none" else {})
    rows = panels.partition_rows(image)
    assert len(rows) == int(numbers["partitions"])
    assert sum(LEADERLESS in r.flags for r in rows) == int(numbers["leaderless"])
    under = sum(UNDER_MIN in r.flags for r in rows)
    assert under == int(numbers["under min ISR"])
    series = h.series()
    assert series["under_min_isr"][-1][1] == under  # the incremental count ends where a full one does
    assert series["fenced_brokers"][-1][1] == sum(r.state == "fenced" for r in brokers)
    assert sum(n for _, n in series["records_per_s"]) == len(h.entries)
    assert [e.offset for e in h.events] == sorted(e.offset for e in h.events)
    assert image.partition_count == load_log_dir(CORPUS / node)[0].partition_count
    middle = h.entries[len(h.entries) // 2].offset  # a replay from a checkpoint, as the loader's own
    assert h.frame_at(middle).image == load_log_dir(CORPUS / node, offset=middle)[0]
    assert panels.header_info(frame, h.info).leader != "none"


def test_the_live_state_says_paused_or_playing_never_both() -> None:
    from metashell.live.feed import AttachStatus

    up = AttachStatus("c1:9093", connected=True, leader_id=1, leader_epoch=2, applied_offset=90, high_watermark=91,
                      note="following leader 1 (epoch 2)")
    paused = panels.live_state(up, following=False, offset=40, new_records=7)
    assert paused == ("⏸ paused @40, +7 new", "paused")
    playing = panels.live_state(up, following=False, offset=40, new_records=7, playing=2.0)
    assert playing == ("▶ playing 2x @40, +7 new", "paused") and "paused" not in playing[0]
    home = panels.live_state(up, following=False, offset=-1, new_records=0, playing=0.5)
    assert home[0] == "▶ playing 0.5x before the first record, +0 new"
    down = panels.live_state(AttachStatus("c1:9093", error="cluster id mismatch"), following=False, offset=3,
                             new_records=0, playing=1.0)
    assert down == ("✖ cluster id mismatch · ▶ playing 1x @3, +0 new", "down")
