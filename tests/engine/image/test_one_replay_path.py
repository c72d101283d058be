"""One replay path: the export's history tables, the dashboard's History and the shell's seek
all replay through MetadataDelta (KIP-868 transactions, ClearElrRecord, snapshots included),
and seek answers from checkpoints of a log read once."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from engine.image import metadata_delta as delta_module
from engine.image.metadata_delta import MetadataDelta
from engine.common.kafka_uuid import kafka_to_uuid
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import load_log_dir
from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i32
from engine.storage.metadata_log import MetadataLog
from engine.storage.snapshot_writer import SnapshotId
from metashell.dashboard.history import History
from tests.broker_records import broker_fencing as _fence, broker_registration as _broker
from metashell.export.history_tables import history_rows, images_at
from metashell.shell.session import Session
from metashell.source import Source
from tests.conftest import CORPUS, corpus_params

ROOT = Path(__file__).resolve().parents[3]
PAY = uuid.UUID(int=0x9A)


def _partition(pid: int = 0, replicas=(1, 2, 3), leader: int = 1) -> m.PartitionRecordV2:
    return m.PartitionRecordV2(
        partition_id=i32(pid), topic_id=PAY, replicas=tuple(map(i32, replicas)), isr=tuple(map(i32, replicas)),
        removing_replicas=(), adding_replicas=(), leader=i32(leader), leader_recovery_state=i8(0),
        leader_epoch=i32(0), partition_epoch=i32(0), directories=(None,) * len(replicas),
        eligible_leader_replicas=None, last_known_elr=None)


def _change(pid: int = 0, **fields) -> m.PartitionChangeRecordV2:
    converted = {k: (tuple(map(i32, v)) if isinstance(v, tuple) else i32(v)) for k, v in fields.items()}
    return m.PartitionChangeRecordV2(partition_id=i32(pid), topic_id=PAY, **converted)


BEGIN, END = m.BeginTransactionRecordV0(name="t"), m.EndTransactionRecordV0()
ABORT = m.AbortTransactionRecordV0(reason="controller failover")

# (offsets) the batches of the crafted log, one second apart
STORY = [
    [_broker(1), _broker(2), _broker(3)],  # 0-2
    [_fence(1, False), _fence(2, False), _fence(3, False)],  # 3-5
    [m.TopicRecordV0(name="pay", topic_id=PAY), _partition()],  # 6-7: pay-0 leader 1, ISR [1,2,3]
    [BEGIN],  # 8: a transaction over three batches ...
    [_change(leader=2), _fence(2, True)],  # 9-10
    [ABORT],  # 11: ... aborted: neither the leader change nor the fence happened
    [_change(isr=(1, 2))],  # 12: ISR shrink, leader still 1
    [BEGIN, _change(leader=3, isr=(3, 1)), END],  # 13-15: committed: leader 3
    [_change(isr=(3,), eligible_leader_replicas=(1,), last_known_elr=(2,))],  # 16: ELR [1]
    [m.ClearElrRecordV0(topic_name="pay")],  # 17: ELR cleared
    [_change(isr=(3, 1))],  # 18
    [BEGIN, _change(leader=1)],  # 19-20: still open where the log ends: not applied
]


def _write(directory: Path, batches=STORY) -> Path:
    with MetadataLog.create(directory, fsync_policy="never") as log:
        for n, records in enumerate(batches):
            log.append(records, epoch=1, timestamp_ms=1_000 * (n + 1))
    return directory


@pytest.fixture()
def story(tmp_path: Path) -> Path:
    return _write(tmp_path / "story")


def _rows(table) -> list[dict]:
    return [dict(zip(table.columns, row)) for row in table.rows]


# -- MetadataDelta's transaction API ---------------------------------------------------------------


def test_replay_says_what_befell_each_record_and_carries_an_open_transaction() -> None:
    delta = MetadataDelta(MetadataImage())
    outcomes = [delta.replay(r) for r in (m.TopicRecordV0(name="pay", topic_id=PAY), BEGIN, _partition())]
    assert outcomes == [delta_module.APPLIED, delta_module.PENDING, delta_module.PENDING]
    assert len(delta.open_transaction) == 1
    image = delta.apply()
    assert image.topics.topic("pay").partitions == {}  # an open transaction is in no image
    carried = MetadataDelta(image, delta.open_transaction)  # the next batch goes on with it
    assert carried.replay(END) == delta_module.COMMITTED and carried.open_transaction is None
    assert carried.apply().topics.topic("pay").partitions[0].leader == 1
    dropped = MetadataDelta(image, delta.open_transaction)
    assert dropped.replay(ABORT) == delta_module.ABORTED and dropped.apply().topics.topic("pay").partitions == {}


def test_transaction_markers_out_of_place_are_skipped() -> None:
    delta = MetadataDelta(MetadataImage())
    assert delta.replay(END) == delta_module.APPLIED and delta.replay(ABORT) == delta_module.APPLIED
    assert delta.skipped == 2
    delta.replay(BEGIN)
    delta.replay(m.TopicRecordV0(name="pay", topic_id=PAY))
    assert delta.replay(BEGIN) == delta_module.PENDING and delta.skipped == 3  # Kafka: a fault; the transaction goes on
    assert delta.replay(END) == delta_module.COMMITTED and delta.apply().topics.topic("pay") is not None


# -- history tables ------------------------------------------------------------------------------


def test_an_aborted_transaction_is_flagged_and_changes_no_state(story: Path) -> None:
    changes = {r["offset"]: r for r in _rows(history_rows(story)["partition_changes"])}
    assert changes[9]["aborted"] is True and changes[9]["leader"] == 2 and changes[9]["leader_after"] == 1
    assert changes[12]["aborted"] is False and changes[12]["leader_after"] == 1
    assert changes[12]["isr_after"] == [1, 2]
    fencing = {r["offset"]: r for r in _rows(history_rows(story)["broker_fencing"])}
    assert fencing[10]["event"] == "fence" and fencing[10]["aborted"] is True and fencing[10]["fenced"] is False
    records = {r["offset"]: r for r in _rows(history_rows(story)["records"])}
    assert [records[o]["aborted"] for o in range(7, 13)] == [False, True, True, True, True, False]


def test_a_committed_transaction_takes_effect_at_its_end(story: Path) -> None:
    changes = {r["offset"]: r for r in _rows(history_rows(story)["partition_changes"])}
    assert (changes[14]["leader_after"], changes[14]["isr_after"], changes[14]["aborted"]) == (3, [3, 1], False)
    records = {r["offset"]: r for r in _rows(history_rows(story)["records"])}
    assert [records[o]["aborted"] for o in (13, 14, 15)] == [False, False, False]


def test_clear_elr_is_a_partition_change_and_later_rows_see_it(story: Path) -> None:
    changes = _rows(history_rows(story)["partition_changes"])
    by_offset = {r["offset"]: r for r in changes}
    assert by_offset[16]["elr_after"] == [1]
    assert by_offset[18]["elr_after"] == [] and by_offset[18]["isr_after"] == [3, 1]
    cleared = [r for r in changes if r["type"] == "CLEAR_ELR_RECORD"]
    assert [(r["offset"], r["topic"], r["partition"], r["elr"], r["elr_after"]) for r in cleared] == [
        (17, "pay", 0, [], [])]


def test_a_transaction_open_at_the_log_end_is_not_applied(story: Path) -> None:
    tables = history_rows(story)
    changes = {r["offset"]: r for r in _rows(tables["partition_changes"])}
    assert changes[20]["aborted"] is None and changes[20]["leader"] == 1 and changes[20]["leader_after"] == 3
    assert [r["aborted"] for r in _rows(tables["records"])][-2:] == [None, None]
    image, info = load_log_dir(story)
    assert image.topics.topic("pay").partitions[0].leader == 3
    assert any("metadata transaction is open at offset 20" in note for note in info.notes)
    # as of an earlier end the same records are not there yet, and an end inside the aborted
    # transaction leaves it open: its rows are null, not guessed
    cut = _rows(history_rows(story, start=8, end=10)["partition_changes"])
    assert [(r["offset"], r["aborted"], r["leader_after"]) for r in cut] == [(9, None, 1)]


def test_history_starts_from_the_snapshot_the_segments_continue_from(tmp_path: Path) -> None:
    directory = _write(tmp_path / "snap", STORY[:3])
    with MetadataLog(directory / "__cluster_metadata-0", segment_bytes=1) as log:
        log.write_snapshot(SnapshotId(8, 1), [m.TopicRecordV0(name="pay", topic_id=PAY), _partition()],
                           last_contained_log_timestamp_ms=3_000, now_ms=9)
        log.append([_change(isr=(1, 2))], epoch=1, timestamp_ms=4_000)
        log.roll()
        log.delete_before_latest_snapshot()
        log.append([_change(leader=2)], epoch=1, timestamp_ms=5_000)
    tables = history_rows(directory)
    changes = _rows(tables["partition_changes"])
    assert [(r["offset"], r["topic"], r["leader_after"], r["isr_after"]) for r in changes] == [
        (8, "pay", 1, [1, 2]), (9, "pay", 2, [1, 2])]
    assert [r["offset"] for r in _rows(tables["records"])] == [8, 9]


def test_images_at_agree_with_the_loader(story: Path) -> None:
    table = images_at(story, [9, 12, 20, 14])
    leaders = {row[0]: row[1 + table.columns[1:].index("leader")] for row in table.rows}
    assert leaders == {9: 1, 12: 1, 14: 1, 20: 3}  # 14: the transaction commits at 15
    assert leaders == {o: load_log_dir(story, offset=o)[0].topics.topic("pay").partitions[0].leader
                       for o in leaders}


# -- one path for the dashboard and the shell ---------------------------------------------------------


def test_dashboard_and_shell_answer_alike_at_every_offset(story: Path, monkeypatch) -> None:
    from engine.image import history_checkpoints

    monkeypatch.setattr(history_checkpoints, "CHECKPOINT_RECORDS", 2)  # transactions across checkpoints
    monkeypatch.setattr(history_checkpoints, "CHEAP_BATCH_IMAGE", -1)
    dash = History.open_log_dir(story)
    source = Source(log_dir=story)
    for offset in range(-1, 21):
        expected = load_log_dir(story, offset=offset)[0]
        assert dash.frame_at(offset).image == expected, offset
        assert source.load(offset=max(offset, 0))[0] == load_log_dir(story, offset=max(offset, 0))[0], offset
    assert dash.frame_at(10).image.cluster.brokers[2].fenced is False


def test_checkpoints_thin_out_past_their_budget_and_answers_stay(story: Path, monkeypatch) -> None:
    from engine.image import history_checkpoints, metadata_history

    monkeypatch.setattr(history_checkpoints, "CHECKPOINT_RECORDS", 1)
    dense = metadata_history.MetadataHistory.open_log_dir(story)
    monkeypatch.setattr(history_checkpoints, "CHECKPOINT_BUDGET", 3)  # a few brokers' worth of entries
    sparse = metadata_history.MetadataHistory.open_log_dir(story)
    assert len(sparse.checkpoints) < len(dense.checkpoints) // 2
    for offset in range(-1, 21):
        assert sparse.image_at(offset=offset) == dense.image_at(offset=offset) == load_log_dir(story, offset=offset)


def test_no_module_reaches_into_metadata_delta() -> None:
    """MetadataDelta's private names, used on anything but ``self`` outside its own module."""
    source = (ROOT / "engine" / "image" / "metadata_delta.py").read_text()
    tree = ast.parse(source)
    delta_class = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "MetadataDelta")
    private = {n.attr for n in ast.walk(delta_class) if isinstance(n, ast.Attribute) and n.attr.startswith("_")
               and not n.attr.startswith("__")}
    private |= {n.name for n in delta_class.body if isinstance(n, ast.FunctionDef) and n.name.startswith("_")
                and not n.name.startswith("__")}
    assert "_transaction" in private
    found = []
    for path in sorted([*ROOT.glob("engine/**/*.py"), *ROOT.glob("metashell/**/*.py")]):
        if path.name == "metadata_delta.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in private and not (
                    isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
    assert found == []


# -- seek answers from checkpoints ---------------------------------------------------------------------


def test_seeking_back_and_forth_reads_the_log_once(story: Path) -> None:
    lines: list[str] = []
    session = Session(Source(log_dir=story), out=lines.append)
    session.load()
    history = session.source.history
    read = list(history.files_read)
    assert [p.name for p in read] == ["00000000000000000000.log"]
    for point in ("3", "12", "3", "18", "latest", "9"):
        assert session.run_line(f"seek {point}") == 0
    assert history.files_read == read and session.source.history is history
    assert lines[-1] == "at offset 9" and session.image == load_log_dir(story, offset=9)[0]


def test_seek_opens_no_segment_again_in_a_real_process(story: Path) -> None:
    """Every file the process opens, from Python's audit hook: each segment once."""
    probe = ("import json, sys\n"
             "opened = []\n"
             "sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == 'open' "
             "and str(args[0]).endswith('.log') else None)\n"
             "from metashell.cli import run\n"
             f"status = run(['--log-dir', {str(story)!r}, '-c', 'seek 3; seek 12; seek 3; seek latest; seek 18'])\n"
             "print(json.dumps([status, opened]))\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    status, opened = json.loads(done.stdout.splitlines()[-1])
    assert status == 0 and [Path(p).name for p in opened] == ["00000000000000000000.log"], done.stdout


def test_a_point_before_the_starting_snapshot_reads_that_span_once(story: Path) -> None:
    with MetadataLog(story / "__cluster_metadata-0") as log:
        log.write_snapshot(SnapshotId(13, 1), _image_records(load_log_dir(story, offset=12)[0]),
                           last_contained_log_timestamp_ms=7_000, now_ms=9)
    source = Source(log_dir=story)
    image, info = source.load()
    assert info.snapshot == SnapshotId(13, 1) and image == load_log_dir(story)[0]
    assert len(source.history.files_read) == 1  # from the snapshot on
    for offset in (4, 12, 7, 16, 4):
        assert source.load(offset=offset)[0] == load_log_dir(story, offset=offset)[0], offset
    assert source.load(time_ms=3_500)[0] == load_log_dir(story, time_ms=3_500)[0]
    assert len(source.history.files_read) == 2  # the span before the snapshot, read once


def test_seek_latest_reads_what_a_running_node_appended(story: Path) -> None:
    source = Source(log_dir=story)
    source.load()
    source.load()
    assert len(source.history.files_read) == 1  # nothing changed: nothing read
    with MetadataLog(story / "__cluster_metadata-0") as log:
        log.append([END], epoch=1, timestamp_ms=20_000)  # the open transaction commits
    image, info = source.load()
    assert image.topics.topic("pay").partitions[0].leader == 1 and info.end_offset == 22
    assert image == load_log_dir(story)[0] and not any("transaction" in n for n in info.notes)


def _image_records(image):
    from engine.image.image_writer import image_records

    return image_records(image)


CORPUS_DIRS = sorted(str(p.parent.relative_to(CORPUS)) for p in CORPUS.glob("**/__cluster_metadata-0")) \
    if CORPUS.is_dir() else []


@pytest.mark.parametrize("node", corpus_params(CORPUS_DIRS), ids=lambda n: n or "no-corpus")
@pytest.mark.slow
def test_corpus_history_rows_are_the_images_state(node: str) -> None:
    """On real logs every partition change has its state after it, and it is the image's there."""
    changes = _rows(history_rows(CORPUS / node, tables=["partition_changes"])["partition_changes"])
    assert all(r["leader_after"] is not None and r["topic"] is not None for r in changes if r["aborted"] is False)
    dash = History.open_log_dir(CORPUS / node)  # the same start, the same replay
    for r in changes[::max(1, len(changes) // 50)]:
        partition = dash.frame_at(r["offset"]).image.topics.by_id[kafka_to_uuid(r["topic_id"])].partitions[r["partition"]]
        assert (partition.leader, list(partition.isr), list(partition.elr)) == (
            r["leader_after"], r["isr_after"], r["elr_after"]), r["offset"]
