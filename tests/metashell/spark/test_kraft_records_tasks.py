"""The kraft data source's records table, task by task as the executors read it, without Spark:
the same rows as the export (metashell.export.history_rows), transactions straddling files,
offsets skipping files, damage in FAILFAST and PERMISSIVE."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.records import metadata_records as m
from engine.records.kio_codec import i8
from engine.storage.log_reader import list_log_dir, read_batch_headers
from metashell.spark import transaction_edges
from metashell.spark.corrupt import KraftReadError
from metashell.spark.pushed import Pushed
from tests.conftest import CORPUS, corpus_params
from tests.metashell.history.history_script import STORY, _leader
from tests.metashell.spark.kraft_source_fixtures import (export_records, plan, read_rows, rows_of,
                                                          write_split_story, write_whole_story)

CORPUS_DIRS = sorted(str(p.parent) for p in CORPUS.glob("**/__cluster_metadata-0")) if CORPUS.is_dir() else []
BEGIN, END, ABORT = m.BeginTransactionRecordV0(name="t"), m.EndTransactionRecordV0(), m.AbortTransactionRecordV0()


def _config(name: str) -> m.ConfigRecordV0:
    return m.ConfigRecordV0(resource_type=i8(2), resource_name="orders", name=name, value="1")


# transactions across segment files when each batch is a file of its own: an aborted one over five
# files with a control record inside (never part of one), a stray End, a committed one over three
# files, and one still open at the end over two
STRADDLING = STORY[:9] + [
    ([BEGIN], False), ([_config("a")], False), ([_leader(1)], True), ([_config("b")], False), ([ABORT], False),
    ([_config("c")], False), ([END], False),
    ([BEGIN, _config("d")], False), ([_config("e")], False), ([m.NoOpRecordV0()], False), ([_config("f"), END], False),
    ([_config("g")], False), ([BEGIN], False), ([_config("h")], False),
]


def _without_cluster(rows: list[tuple]) -> list[tuple]:
    return [row[1:] for row in rows]


@pytest.mark.parametrize("node", corpus_params(CORPUS_DIRS))
def test_corpus_records_are_the_exports_rows_led_by_the_cluster_id(node: str) -> None:
    rows = read_rows({"path": node})
    assert _without_cluster(rows) == export_records(Path(node))
    meta_cluster = (Path(node) / "meta.properties").read_text()
    assert {row[0] for row in rows} == {next(line.split("=", 1)[1] for line in meta_cluster.splitlines()
                                             if line.startswith("cluster.id="))}


def test_demo_logs_are_the_exports_rows(demo_log_dir: Path, dashboard_demo_dir: Path) -> None:
    for directory in (demo_log_dir, dashboard_demo_dir):
        rows = read_rows({"path": str(directory), "clusterId": "demo"})
        assert _without_cluster(rows) == export_records(directory)
        assert rows and {row[0] for row in rows} <= {"demo", *_meta_cluster(directory)}


def _meta_cluster(directory: Path) -> set[str]:
    meta = directory / "meta.properties"
    return {line.split("=", 1)[1] for line in meta.read_text().splitlines()
            if line.startswith("cluster.id=")} if meta.is_file() else set()


def test_transactions_straddling_files_have_the_exports_aborted(tmp_path: Path) -> None:
    split = write_split_story(tmp_path / "split", STRADDLING)
    whole = write_split_story(tmp_path / "whole", STRADDLING, roll_after=set())
    assert len(list_log_dir(split).segments) == len(STRADDLING)
    expected = export_records(whole)
    assert _without_cluster(read_rows({"path": str(split)})) == expected == export_records(split)
    aborted = {row[0]: row[-1] for row in expected}
    # the aborted transaction's records and markers, the control record inside it, the stray End,
    # the committed one, the open one
    assert [aborted[o] for o in range(11, 16)] == [True, True, False, True, True]
    assert (aborted[16], aborted[17]) == (False, False)
    assert {aborted[o] for o in range(18, 24)} == {False}
    assert (aborted[24], aborted[25], aborted[26]) == (False, None, None)


def test_end_and_start_offsets_read_the_log_as_the_export_does(tmp_path: Path) -> None:
    split = write_split_story(tmp_path / "split", STRADDLING)
    last = export_records(split)[-1][0]
    for end in range(0, last + 1):
        assert _without_cluster(read_rows({"path": str(split), "endOffset": str(end)})) == export_records(split, end=end), end
    for start in range(0, last + 1, 3):
        assert _without_cluster(read_rows({"path": str(split), "startOffset": str(start)})) == \
            export_records(split, start=start), start


def test_offsets_skip_files_by_their_names(tmp_path: Path) -> None:
    split = write_split_story(tmp_path / "split", STRADDLING)
    everything = plan({"path": str(split)})
    assert len(everything) == len(STRADDLING)
    narrowed = plan({"path": str(split), "startOffset": "10", "endOffset": "12"})
    assert [task.base_offset for task in narrowed] == [10, 11, 12]
    pushed = plan({"path": str(split)}, Pushed(offset_min=20))
    assert [task.base_offset for task in pushed] == [t.base_offset for t in everything if t.base_offset >= 20]
    assert plan({"path": str(split)}, Pushed(cluster_ids=frozenset({"other"}))) == []
    assert plan({"path": str(split)}, Pushed(types=frozenset())) == []


def test_a_log_without_transactions_reads_no_neighbour(tmp_path: Path, monkeypatch) -> None:
    batches = [batch for batch in STORY if not any(isinstance(r, type(BEGIN)) for r in batch[0])]
    split = write_split_story(tmp_path / "split", batches)
    opened: list[str] = []
    real = transaction_edges._entries
    monkeypatch.setattr(transaction_edges, "_entries", lambda path, end: (opened.append(path), real(path, end))[1])
    tasks = plan({"path": str(split)})
    assert _without_cluster(rows_of(tasks[5:6])) == [row for row in export_records(split) if row[0] == tasks[5].base_offset]
    assert opened == []


def test_pushed_rows_are_exact(tmp_path: Path) -> None:
    split = write_split_story(tmp_path / "split", STRADDLING)
    rows = read_rows({"path": str(split)})
    kept = read_rows({"path": str(split)}, Pushed(offset_min=5, offset_max=17, time_min_ms=8_000,
                                                  types=frozenset({"CONFIG_RECORD", "NO_OP_RECORD"})))
    assert kept == [r for r in rows if 5 <= r[1] <= 17 and r[3] >= 8_000 and r[5] in ("CONFIG_RECORD", "NO_OP_RECORD")]
    assert kept and len(kept) < len(rows)


def _batch_positions(path: Path) -> list[tuple[int, int]]:
    return [(pos, header.base_offset) for pos, header in read_batch_headers(path)]


def _damage_batch(directory: Path, index: int) -> tuple[Path, int, int]:
    """Flip a byte inside the records of the index-th batch of the first segment."""
    segment = list_log_dir(directory).segments[0][1]
    pos, base = _batch_positions(segment)[index]
    data = bytearray(segment.read_bytes())
    data[pos + 70] ^= 0xFF
    segment.write_bytes(bytes(data))
    return segment, pos, base


def test_a_damaged_batch_fails_its_task_in_one_line_failfast(tmp_path: Path) -> None:
    node = write_split_story(tmp_path / "node", STORY, roll_after={12})
    segment, pos, _ = _damage_batch(node, 4)
    with pytest.raises(KraftReadError) as failed:
        read_rows({"path": str(node)})
    assert str(failed.value).startswith(f"{segment}, byte offset {pos}: batch CRC mismatch")
    assert "\n" not in str(failed.value)


def test_permissive_damage_is_a_row_and_reading_goes_on(tmp_path: Path) -> None:
    node = write_split_story(tmp_path / "node", STORY, roll_after={12})
    clean = read_rows({"path": str(node)})
    segment, pos, base = _damage_batch(node, 4)
    rows = read_rows({"path": str(node), "mode": "PERMISSIVE"}, permissive=True)
    corrupt = [row for row in rows if row[-1] is not None]
    assert len(corrupt) == 1
    assert corrupt[0][:2] == ("story-cluster", base) and set(corrupt[0][2:-1]) == {None}
    assert corrupt[0][-1].startswith(f"{segment}, byte offset {pos}: batch CRC mismatch")
    damaged = {row[1] for row in clean if row[1] in range(base, base + 3)}
    # every other record is there, in order, with the damage where the batch was
    assert [row[:-1] for row in rows if row[-1] is None] == [row for row in clean if row[1] not in damaged]
    assert rows.index(corrupt[0]) == next(i for i, row in enumerate(clean) if row[1] == base)


def test_a_torn_tail_of_the_active_segment_is_not_damage(tmp_path: Path) -> None:
    node = write_whole_story(tmp_path / "node")
    clean = read_rows({"path": str(node)})
    segment = list_log_dir(node).segments[-1][1]
    data = segment.read_bytes()
    last_pos = _batch_positions(segment)[-1][0]
    segment.write_bytes(data + data[last_pos:last_pos + (len(data) - last_pos) // 2])
    assert read_rows({"path": str(node)}) == clean
    assert read_rows({"path": str(node), "mode": "PERMISSIVE"}, permissive=True) == [r + (None,) for r in clean]


def test_records_below_the_oldest_snapshot_are_rows_of_both(tmp_path: Path) -> None:
    """A log cut back to a snapshot keeps, in the segment that straddles it, records below it:
    the source and the export both give them (their aborted by the markers)."""
    from engine.image.image_writer import image_records
    from engine.image.metadata_loader import load_log_dir
    from engine.storage.metadata_log import MetadataLog
    from engine.storage.snapshot_writer import SnapshotId

    node = write_split_story(tmp_path / "node", STRADDLING)
    image, _ = load_log_dir(node, offset=12)
    with MetadataLog.create(node, fsync_policy="never") as log:
        log.write_snapshot(SnapshotId(16, 1), image_records(image), last_contained_log_timestamp_ms=1, now_ms=1)
    for base, path in list_log_dir(node).segments:
        if base < 11:
            path.unlink()
    exported = export_records(node)
    assert [row[0] for row in exported][:6] == [11, 12, 13, 14, 15, 16]
    assert [row[-1] for row in exported][:5] == [True, True, False, True, True]
    assert _without_cluster(read_rows({"path": str(node)})) == exported
    for end in (12, 15, 20):
        assert _without_cluster(read_rows({"path": str(node), "endOffset": str(end), "startOffset": "12"})) == \
            export_records(node, start=12, end=end)


def test_permissive_damage_without_a_readable_header_is_not_lost_to_start_offset(tmp_path: Path) -> None:
    """A batch whose length cannot be trusted hides the rest of its segment: with startOffset
    inside that rest the damage is still a row, placed at the first offset asked for."""
    node = write_split_story(tmp_path / "node", STORY, roll_after={12})
    segment = list_log_dir(node).segments[0][1]
    pos, base = _batch_positions(segment)[4]
    data = bytearray(segment.read_bytes())
    data[pos + 8:pos + 12] = (0x7FFFFFF0).to_bytes(4, "big")  # the batch length: past the file's end
    segment.write_bytes(bytes(data))
    rows = read_rows({"path": str(node), "mode": "PERMISSIVE", "startOffset": str(base + 1)}, permissive=True)
    corrupt = [row for row in rows if row[-1] is not None]
    assert len(corrupt) == 1 and corrupt[0][:2] == ("story-cluster", base + 1)
    assert corrupt[0][-1].startswith(f"{segment}, byte offset {pos}: ")
    # startOffset past the whole first segment (0..18): the damage is not in the range asked for
    later = read_rows({"path": str(node), "mode": "PERMISSIVE", "startOffset": "19"}, permissive=True)
    assert all(row[-1] is None for row in later) and later
