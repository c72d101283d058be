"""spark.read.format("kraft") in the shared local session gives the export's rows: on the corpus's
real Kafka directories, the demos, and a fleet of them grouped by cluster_id."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import metashell.spark as kraft
from metashell.export import history_dataframe
from tests.metashell.export.spark_rows import collected
from tests.metashell.spark.kraft_source_fixtures import export_records, read_kraft, sorted_rows, write_split_story

pytestmark = pytest.mark.slow


def _cluster_of(node: Path) -> str:
    meta = (node / "meta.properties").read_text().splitlines()
    return next(line.split("=", 1)[1] for line in meta if line.startswith("cluster.id="))


def test_corpus_rows_are_the_exports(spark, corpus: Path) -> None:
    """Every real Kafka directory of the corpus (one node of the three-node cluster: its nodes
    share a cluster id) in one query, each cluster's rows the export's."""
    kraft.register(spark)
    nodes = sorted({p.parent for p in corpus.glob("**/__cluster_metadata-0")} - set(corpus.glob("hiage*/kafka[23]")))
    assert len({_cluster_of(node) for node in nodes}) == len(nodes) >= 6
    by_cluster: dict[str, list[tuple]] = {}
    table = read_kraft(spark, *map(str, nodes), table="records").toArrow()  # Arrow: collect() is slow for 140k rows
    for row in zip(*(column.to_pylist() for column in table.columns)):
        by_cluster.setdefault(row[0], []).append(row[1:])
    for node in nodes:
        assert sorted(by_cluster.pop(_cluster_of(node))) == sorted(export_records(node)), node
    assert by_cluster == {}


def test_the_source_and_the_exports_dataframe_agree(spark, corpus: Path) -> None:
    kraft.register(spark)
    node = corpus / "hiage__kafka-raft" / "kafka1"
    df = read_kraft(spark, str(node))
    exported = history_dataframe(node, spark=spark, driver=True)  # the pure-Python export, not the source again
    assert df.columns == ["cluster_id", *exported.columns]
    assert [f.dataType for f in df.schema.fields[1:]] == [f.dataType for f in exported.schema.fields]
    assert sorted_rows(df) == sorted(collected(exported), key=lambda row: row[0])


def test_demo_rows_are_the_exports(spark, dashboard_demo_dir: Path, demo_log_dir: Path) -> None:
    kraft.register(spark)
    for directory in (dashboard_demo_dir, demo_log_dir):
        df = read_kraft(spark, str(directory), clusterId="demo")
        assert sorted_rows(df) == sorted(export_records(directory))


def test_a_fleet_of_directories_groups_by_cluster_id(spark, corpus: Path, tmp_path: Path) -> None:
    kraft.register(spark)
    fleet = tmp_path / "fleet"
    names = ["Yashasvi960__kafka-service", "hiage__kafka-raft/kafka1"]
    for name in names:
        shutil.copytree(corpus / name, fleet / name.replace("/", "-"))
    write_split_story(fleet / "story", cluster_id="story-cluster")
    counts = {row["cluster_id"]: row["count"] for row in
              read_kraft(spark, str(fleet / "*")).groupBy("cluster_id").count().collect()}
    expected = {}
    for directory in sorted(fleet.iterdir()):
        meta = (directory / "meta.properties").read_text().splitlines()
        cluster = next(line.split("=", 1)[1] for line in meta if line.startswith("cluster.id="))
        expected[cluster] = len(export_records(directory))
    assert counts == expected and len(counts) == 3
