"""The change tables of an archive with a gap: no row speaks across it, and the ``gaps`` table
says where it is.

The scripted history of test_change_tables is written with our own MetadataLog in three
segments (offsets 0-11, 12-17, 18-34) with a snapshot at end offset 18; the archive is that
directory without its middle segment, as the recorder leaves one that fell behind the leader's
log start (docs: the archive layout): a hole from 12 to 17, the snapshot where it resumes, and
``archive.json`` naming the gap. Pure Python.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.common.errors import MetadataError
from engine.image.image_writer import image_records
from engine.image.metadata_loader import load_log_dir
from engine.records.metadata_record_serde import ControlRecord
from engine.storage.log_reader import read_batches
from engine.storage.log_segment import segment_file_name
from engine.storage.metadata_log import MetadataLog
from engine.storage.snapshot_writer import SnapshotId
from metashell.export.change_tables import change_rows
from metashell.export.history_tables import history_rows
from tests.metashell.export.test_change_tables import SCRIPT, T0

GAP_FIRST, RESUME = 12, 18
REASON = "fell behind the leader's log start (21); fetched snapshot 18-1"
RECORDED_MS = T0 + 99


def _archive(tmp_path: Path, *, manifest: bool = True, snapshot: bool = True) -> tuple[Path, Path]:
    """(the whole log, the archive with its hole)."""
    full = tmp_path / "full"
    offset = 0
    with MetadataLog.create(full, fsync_policy="never") as log:
        for records in SCRIPT:
            if offset in (GAP_FIRST, RESUME):
                log.roll()
            log.append(records, epoch=1, timestamp_ms=T0 + offset, control=isinstance(records[0], ControlRecord))
            offset += len(records)
        if snapshot:
            log.write_snapshot(SnapshotId(RESUME, 1), image_records(load_log_dir(full, offset=RESUME - 1)[0]),
                               last_contained_log_timestamp_ms=T0 + RESUME - 1, now_ms=0)
    archive = tmp_path / "archive"
    shutil.copytree(full, archive)
    (archive / "__cluster_metadata-0" / segment_file_name(GAP_FIRST)).unlink()
    if manifest:
        (archive / "archive.json").write_text(json.dumps({
            "format": 1, "cluster_id": "c", "first_offset": 0, "last_offset": 34,
            "ranges": [[0, GAP_FIRST - 1], [RESUME, 34]],
            "gaps": [{"first": GAP_FIRST, "resume": RESUME, "reason": REASON, "recorded_ms": RECORDED_MS}],
            "snapshots": [[RESUME, 1]]}))
    return full, archive


def _outside_gap(tables: dict) -> dict:
    return {kind: [row for row in t.rows if not GAP_FIRST <= row[0] < RESUME] for kind, t in tables.items()
            if kind != "gaps"}


def test_an_archive_gives_every_row_outside_its_gap_and_says_where_it_is(tmp_path: Path) -> None:
    full, archive = _archive(tmp_path)
    whole, cut = change_rows(full), change_rows(archive)
    assert {kind: t.rows for kind, t in cut.items() if kind != "gaps"} == _outside_gap(whole)
    assert cut["gaps"].rows == [(GAP_FIRST, RESUME, f"archive gap: {REASON}", RECORDED_MS)]
    assert whole["gaps"].rows == []
    # after the gap the old values are the snapshot's: the topic's deletion at 18 takes the config
    # set at 17 (in the gap) with it; a replay across the gap would not know it existed
    configs = [(r[0], r[4], r[7], r[8]) for r in cut["config_changes"].rows]
    assert (18, "cleanup.policy", "compact", None) in configs
    assert [r[0] for r in cut["feature_changes"].rows] == [0, 23]  # the upgrade at 16 is in the gap


def test_a_hole_without_a_manifest_is_a_gap_all_the_same(tmp_path: Path) -> None:
    full, archive = _archive(tmp_path, manifest=False)
    cut = change_rows(archive)
    assert {kind: t.rows for kind, t in cut.items() if kind != "gaps"} == _outside_gap(change_rows(full))
    [(first, resume, reason, recorded_ms)] = cut["gaps"].rows
    assert (first, resume, recorded_ms) == (GAP_FIRST, RESUME, None)
    assert "offsets 12 to 17" in reason and "segment" in reason  # the engine's words for a hole, or ours


def test_without_a_snapshot_to_resume_from_the_history_ends_at_the_gap(tmp_path: Path) -> None:
    full, archive = _archive(tmp_path, snapshot=False)
    cut = change_rows(archive)
    assert {kind: t.rows for kind, t in cut.items() if kind != "gaps"} == {
        kind: [row for row in t.rows if row[0] < GAP_FIRST] for kind, t in change_rows(full).items()
        if kind != "gaps"}
    assert cut["gaps"].rows == [(GAP_FIRST, None, f"archive gap: {REASON}", RECORDED_MS)]


def test_export_history_of_an_archive_goes_through_the_runs(tmp_path: Path) -> None:
    _, archive = _archive(tmp_path)
    tables = history_rows(archive, tables=["gaps", "config_changes"])
    assert list(tables) == ["config_changes", "gaps"] and len(tables["gaps"].rows) == 1
    assert 17 not in [r[0] for r in tables["config_changes"].rows]


def test_damage_in_a_log_directory_cuts_its_history_the_same_way(tmp_path: Path) -> None:
    """A batch that fails its CRC (offset 14) in a node's own log: the rows resume at the snapshot
    after it (end offset 18), and the gap names the damage."""
    full, _ = _archive(tmp_path)
    damaged = tmp_path / "damaged"
    shutil.copytree(full, damaged)
    segment = damaged / "__cluster_metadata-0" / segment_file_name(GAP_FIRST)
    pos, batch = [(p, b) for p, b in read_batches(segment) if b.base_offset == 14][0]
    data = bytearray(segment.read_bytes())
    data[pos + batch.size_bytes - 2] ^= 0xFF  # in the records: the header's length still holds
    segment.write_bytes(bytes(data))
    cut = change_rows(damaged)
    assert {kind: t.rows for kind, t in cut.items() if kind != "gaps"} == {
        kind: [row for row in t.rows if not 14 <= row[0] < RESUME] for kind, t in change_rows(full).items()
        if kind != "gaps"}
    [(first, resume, reason, recorded_ms)] = cut["gaps"].rows
    assert (first, resume, recorded_ms) == (14, RESUME, None)
    assert reason.startswith(f"{segment}, byte offset {pos}: batch CRC mismatch")


def test_a_manifest_that_does_not_read_is_one_line(tmp_path: Path) -> None:
    _, archive = _archive(tmp_path)
    manifest = archive / "archive.json"
    for text, what in (('{"gaps": [', "not JSON (Expecting value: line 1 column 11 (char 10))"),
                       ("[1]", "no list of gaps"), ('{"gaps": [{"first": "x"}]}', "gap 0 has no offsets (first, resume)"),
                       ('{"gaps": [{"first": 3, "resume": -1}]}', "gap 0 has no offsets (first, resume)")):
        manifest.write_text(text)
        with pytest.raises(MetadataError) as refused:
            change_rows(archive)
        assert str(refused.value) == f"{manifest}: not a readable archive manifest: {what}"


VOTERS_REASON = "fell behind the leader's log start (4); fetched snapshot 4-1"


def voters_archive(tmp_path: Path, *, manifest: bool = False) -> Path:
    """Voter 1 alone (offsets 0-1), voter 2 added at 2 and a config at 3 (the gap), voter 2
    removed at 4; the snapshot at end offset 4 carries the voters {1, 2} (with its VotersRecord,
    as Kafka writes one at kraft.version 1); ``manifest``: with archive.json naming the gap."""
    from tests.metashell.export.test_change_tables import config, kraft_version, voters

    script = [[kraft_version(1), voters(1)], [voters(1, 2)], [config(2, "t", "k", "v")], [voters(1)]]  # 0-1, 2, 3, 4
    full = tmp_path / "full"
    offset = 0
    with MetadataLog.create(full, fsync_policy="never") as log:
        for records in script:
            if offset in (2, 4):
                log.roll()
            log.append(records, epoch=1, timestamp_ms=T0 + offset, control=isinstance(records[0], ControlRecord))
            offset += len(records)
        log.write_snapshot(SnapshotId(4, 1), image_records(load_log_dir(full, offset=3)[0]),
                           last_contained_log_timestamp_ms=T0 + 3, now_ms=0,
                           kraft_control=[kraft_version(1), voters(1, 2)])
    archive = tmp_path / "archive"
    shutil.copytree(full, archive)
    (archive / "__cluster_metadata-0" / segment_file_name(2)).unlink()
    if manifest:
        (archive / "archive.json").write_text(json.dumps({
            "format": 1, "cluster_id": "c", "first_offset": 0, "last_offset": 4, "ranges": [[0, 1], [4, 4]],
            "gaps": [{"first": 2, "resume": 4, "reason": VOTERS_REASON, "recorded_ms": RECORDED_MS}],
            "snapshots": [[4, 1]]}))
    return archive


def test_after_a_gap_the_voters_are_the_snapshots_not_those_before_the_gap(tmp_path: Path) -> None:
    """Voter 2 joins inside the gap and leaves after it: the snapshot the archive resumes from
    knows voter 2, so its removal has a row; the voters of the segments before the gap (voter 1
    alone) would have hidden it."""
    rows = [(r[0], r[3], r[-4]) for r in change_rows(voters_archive(tmp_path))["voter_changes"].rows]
    assert rows == [(1, "voter 1", "created"), (4, "voter 2", "deleted")]


def test_the_record_tables_go_on_after_the_gap_run_by_run(tmp_path: Path) -> None:
    """The five older tables (records, partition_changes, ...) replay run by run too: the rows
    after the gap are there (from the snapshot's image), those of the gap are not."""
    full, archive = _archive(tmp_path)
    kinds = ["records", "partition_changes", "broker_fencing", "controller_registrations", "leader_changes"]
    whole, cut = history_rows(full, tables=kinds), history_rows(archive, tables=kinds)
    assert {kind: t.rows for kind, t in cut.items()} == {
        kind: [row for row in t.rows if not GAP_FIRST <= row[0] < RESUME] for kind, t in whole.items()}
    assert max(row[0] for row in cut["records"].rows) == 34  # not cut short at the gap
    assert [row[0] for row in cut["records"].rows if row[0] >= GAP_FIRST][:1] == [RESUME]
