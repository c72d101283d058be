"""What load() and option() take, without Spark: paths to each cluster's files (node and log
directories, archives, single files, globs, lists), the options checked in one line, and Spark's
filters made into Pushed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.storage.log_reader import list_log_dir
from metashell.record.archive import Archive
from metashell.spark.options import OptionError, read_options
from metashell.spark.paths import PathError, resolve_paths
from metashell.spark.pushed import Pushed
from tests.metashell.record.archive_fixtures import FakeLeaderLog, record_batches, record_gap
from tests.metashell.spark.kraft_source_fixtures import plan, read_rows, write_split_story

pytest.importorskip("pyspark.sql.datasource")


@pytest.fixture
def node(tmp_path: Path) -> Path:
    return write_split_story(tmp_path / "node", roll_after={3, 8})  # three segments


def test_a_node_directory_and_its_log_directory_are_the_same_files(node: Path) -> None:
    by_node, = resolve_paths([str(node)])
    by_log, = resolve_paths([str(node / "__cluster_metadata-0")])
    assert by_node == by_log
    assert by_node.cluster_id == "story-cluster" and len(by_node.segments) == 3


def test_single_files_keep_the_cluster_id_and_read_only_themselves(node: Path) -> None:
    segments = list_log_dir(node).segments
    second = str(segments[1][1])
    files, = resolve_paths([second])
    assert files.cluster_id == "story-cluster" and [s.path for s in files.segments] == [second]
    rows = read_rows({"path": second})
    assert {row[1] for row in rows} == {row[1] for row in read_rows({"path": str(node)})
                                        if segments[1][0] <= row[1] < segments[2][0]}


def test_a_glob_and_a_list_group_files_per_cluster(tmp_path: Path) -> None:
    write_split_story(tmp_path / "fleet" / "a", cluster_id="cluster-a")
    write_split_story(tmp_path / "fleet" / "b", cluster_id="cluster-b")
    globbed = resolve_paths([str(tmp_path / "fleet" / "*")])
    assert [f.cluster_id for f in globbed] == ["cluster-a", "cluster-b"]
    listed = read_options({"paths": json.dumps([str(tmp_path / "fleet" / "b"), str(tmp_path / "fleet" / "a")])})
    assert [f.cluster_id for f in resolve_paths(listed.paths)] == ["cluster-b", "cluster-a"]
    # a directory and a file of it: the directory, once
    segment = str(list_log_dir(tmp_path / "fleet" / "a").segments[0][1])
    assert len(resolve_paths([str(tmp_path / "fleet" / "a"), segment])) == 1
    assert len(resolve_paths([str(tmp_path / "fleet" / "a"), segment])[0].segments) == \
        len(list_log_dir(tmp_path / "fleet" / "a").segments)


def test_a_glob_passes_over_what_is_not_metadata_with_a_warning_line(tmp_path: Path, capsys) -> None:
    write_split_story(tmp_path / "fleet" / "a", cluster_id="cluster-a")
    (tmp_path / "fleet" / "lost+found").mkdir()
    (tmp_path / "fleet" / "README").write_text("the fleet's metadata")
    assert [f.cluster_id for f in resolve_paths([str(tmp_path / "fleet" / "*")])] == ["cluster-a"]
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all(line.startswith("metashell: warning: ") and "passed over" in line for line in lines)
    assert any("lost+found" in line for line in lines) and any("README" in line for line in lines)
    # named without a glob it is still refused, and a glob of nothing but strays fails naming one
    with pytest.raises(PathError, match="not a metadata log directory"):
        resolve_paths([str(tmp_path / "fleet" / "lost+found")])
    with pytest.raises(PathError, match=r"l\*: the glob matches no metadata \(.*lost\+found"):
        resolve_paths([str(tmp_path / "fleet" / "l*")])


def test_an_archive_gives_its_manifests_cluster_and_the_exports_rows(tmp_path: Path) -> None:
    from metashell.export.history_tables import history_rows

    leader = FakeLeaderLog()
    archive = Archive(tmp_path / "archive", segment_bytes=600).open()
    archive.set_cluster_id("archived-cluster")
    record_batches(archive, leader, 6)
    record_gap(archive, leader, deleted=2, reason="deleted before fetched", recorded_ms=1_700_000_100_000)
    record_batches(archive, leader, 3)
    archive.close()
    files, = resolve_paths([str(tmp_path / "archive")])
    assert files.cluster_id == "archived-cluster" and files.archive == str(tmp_path / "archive")
    rows = read_rows({"path": str(tmp_path / "archive")})
    assert {row[0] for row in rows} == {"archived-cluster"}
    assert [row[1:] for row in rows] == [tuple(r) for r in
                                         history_rows(tmp_path / "archive", tables=["records"])["records"].rows]


def test_a_directory_without_a_cluster_id_needs_the_option(tmp_path: Path) -> None:
    node = write_split_story(tmp_path / "node")
    (node / "meta.properties").unlink()
    with pytest.raises(PathError, match=r"__cluster_metadata-0: no meta.properties or archive.json .*clusterId"):
        resolve_paths([str(node)])
    assert {row[0] for row in read_rows({"path": str(node), "clusterId": "given"})} == {"given"}


@pytest.mark.parametrize("name, text, words", [
    ("meta.properties", "version=banana\n", "meta.properties: 'version' is not a 32-bit integer"),
    ("archive.json", "{not json", "archive.json: not an archive manifest"),
])
def test_a_damaged_cluster_id_file_is_one_line_naming_it(tmp_path: Path, name: str, text: str, words: str) -> None:
    node = write_split_story(tmp_path / "node")
    (node / "meta.properties").unlink()
    (node / name).write_text(text)
    with pytest.raises(PathError) as raised:
        resolve_paths([str(node)])
    assert str(raised.value).startswith(str(node / name)) and words in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize("bad, words", [
    ("missing", "missing: no such file or directory"),
    ("nothing-*", "nothing-*: the glob matches nothing"),
    ("node/meta.properties", "meta.properties: not a metadata segment"),
    ("plain", "plain: not a metadata log directory"),
])
def test_a_path_that_is_not_metadata_is_named_in_one_line(node: Path, bad: str, words: str) -> None:
    (node.parent / "plain").mkdir()
    with pytest.raises(PathError) as failed:
        resolve_paths([str(node.parent / bad)])
    assert words in str(failed.value) and "\n" not in str(failed.value)


@pytest.mark.parametrize("options, words", [
    ({"table": "nope"}, "unknown table 'nope'"),
    ({"mode": "DROPMALFORMED"}, "unknown mode 'DROPMALFORMED'"),
    ({"startOffset": "ten"}, "option startOffset must be an offset"),
    ({"endOffset": "-1"}, "option endOffset must be an offset"),
    ({"startOffset": "9", "endOffset": "3"}, "endOffset 3 is before startOffset 9"),
    ({"colour": "red"}, "unknown option 'colour'"),
    ({"bootstrap.controllers": "h:9093"}, "option 'bootstrap.controllers' is the streaming source's"),
    ({"paths": "{\"a\": 1}"}, "option paths must be a JSON list"),
])
def test_bad_options_are_named_in_one_line(options: dict, words: str) -> None:
    with pytest.raises(OptionError) as failed:
        read_options(options)
    assert words in str(failed.value)


def test_options_are_case_insensitive_and_typed() -> None:
    options = read_options({"TABLE": "partition_changes", "Mode": "permissive", "STARTOFFSET": "3",
                            "endoffset": "9", "clusterid": "x", "path": "/p"})
    assert (options.table, options.permissive, options.start_offset, options.end_offset, options.cluster_id,
            options.paths) == ("partition_changes", True, 3, 9, "x", ("/p",))
    assert read_options({"bootstrap.controllers": "h:9093"}, streaming=True).table == "records"


def test_filters_become_pushed_bounds() -> None:
    from pyspark.sql.datasource import EqualTo, GreaterThan, In, LessThanOrEqual, StringStartsWith

    from metashell.spark.filters import offsets_of, push

    pushed = Pushed()
    for found in (GreaterThan(("offset",), 10), LessThanOrEqual(("offset",), 20), GreaterThan(("offset",), 12),
                  EqualTo(("timestamp_ms",), 5_000), In(("type",), ("A", "B")), EqualTo(("type",), "B"),
                  In(("cluster_id",), ("c1", None))):
        pushed = push(pushed, found)
    assert pushed == Pushed(offset_min=13, offset_max=20, time_min_ms=5_000, time_max_ms=5_000,
                            types=frozenset({"B"}), cluster_ids=frozenset({"c1"}))
    assert push(Pushed(), StringStartsWith(("type",), "P")) is None
    assert push(Pushed(), GreaterThan(("offset",), 1.5)) is None
    assert push(Pushed(), EqualTo(("payload_json",), "x")) is None
    assert offsets_of(In(("offset",), (3, 1, None))) == frozenset({1, 3})


def test_an_offset_set_plans_only_the_files_around_it(node: Path) -> None:
    every = plan({"path": str(node)})
    from metashell.spark.plan import plan_records

    options = read_options({"path": str(node)})
    some = plan_records(resolve_paths(options.paths), Pushed(), options, frozenset({0, 2}))
    assert [t.base_offset for t in some] == [every[0].base_offset]
    from tests.metashell.spark.kraft_source_fixtures import rows_of

    assert [row[1] for row in rows_of(some)] == [0, 2]
