"""docs/export.md's fleet questions, run as written over three clusters' directories (two
copies of the dashboard demo under their own cluster ids, and a real Kafka cluster's from the
corpus), each answer held against the same question asked in pure Python of the export's rows
(metashell.export.history_rows): the data source, the schemas and the docs agree."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from metashell.export.history_tables import history_rows

DOCS = Path(__file__).resolve().parents[3] / "docs" / "export.md"
REAL = "Yashasvi960__kafka-service"


def _docs_block() -> str:
    """The first Python block of the data source's section of docs/export.md."""
    text = DOCS.read_text()
    section = text.split('## A fleet\'s history in Spark: `format("kraft")`', 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def _with_cluster_id(directory: Path, cluster_id: str) -> None:
    meta = directory / "meta.properties"
    meta.write_text(re.sub(r"(?m)^cluster\.id=.*$", f"cluster.id={cluster_id}", meta.read_text()))


@pytest.fixture
def fleet(tmp_path, dashboard_demo_dir, corpus) -> Path:
    root = tmp_path / "fleet"
    for name in ("east", "west"):
        shutil.copytree(dashboard_demo_dir, root / name)
        _with_cluster_id(root / name, f"{name}-cluster-id-0000000")
    shutil.copytree(corpus / REAL, root / "real")
    return root


def _rows(directory: Path, table: str) -> list[dict]:
    t = history_rows(directory, tables=[table])[table]
    return [dict(zip(t.columns, row)) for row in t.rows]


def _cluster_id(directory: Path) -> str:
    return re.search(r"(?m)^cluster\.id=(.*)$", (directory / "meta.properties").read_text()).group(1)


def test_the_docs_fleet_questions_answer_as_the_export_rows_do(spark, fleet) -> None:
    code = _docs_block()
    # the docs' month and threshold, moved to where the demo's history is (March 2026, once a partition)
    code = code.replace('since, until = "2026-10-01", "2026-11-01"', 'since, until = "2026-03-01", "2026-04-01"')
    code = code.replace('.where("count > 10")', '.where("count > 0")')
    code = code.replace('fleet = "/data/kafka-metadata/*"', f'fleet = "{fleet}/*"')
    code = code.replace("spark = metashell.spark.session()", "spark = metashell.spark.register(spark)")
    names: dict = {"spark": spark}
    exec(compile(code, str(DOCS), "exec"), names)

    zone = ZoneInfo(spark.conf.get("spark.sql.session.timeZone"))
    since = datetime(2026, 3, 1, tzinfo=zone).timestamp() * 1000
    until = datetime(2026, 4, 1, tzinfo=zone).timestamp() * 1000
    want_retention, want_flapping, want_moves = set(), Counter(), Counter()
    for directory in sorted(fleet.iterdir()):
        cid = _cluster_id(directory)
        for r in _rows(directory, "config_changes"):
            if r["key"] == "retention.ms" and r["resource_type"] == "topic" and r["aborted"] is False \
                    and since <= r["timestamp_ms"] < until:
                want_retention.add((cid, r["resource_name"], r["old_value"], r["new_value"]))
        was_under: dict = {}
        for r in _rows(directory, "partition_changes"):
            if r["aborted"] is not False:
                continue
            if r["isr_after"] is not None:
                key, under = (r["topic_id"], r["partition"]), len(r["isr_after"]) < r["min_isr_after"]
                if under and not was_under.get(key, False):
                    want_flapping[(cid, r["topic"], r["partition"])] += 1
                was_under[key] = under
            if r["type"] == "PARTITION_CHANGE_RECORD" and r["leader"] >= 0:
                day = datetime.fromtimestamp(r["timestamp_ms"] / 1000, tz=timezone.utc).astimezone(zone).date()
                want_moves[(cid, r["leader"], day)] += 1

    got_retention = {(r.cluster_id, r.resource_name, r.old_value, r.new_value) for r in names["retention_changes"].collect()}
    assert got_retention == want_retention
    assert {c for c, *_ in got_retention} == {"east-cluster-id-0000000", "west-cluster-id-0000000"}
    assert {(r.cluster_id, r.topic, r.partition): r["count"] for r in names["isr_flapping"].collect()} == dict(want_flapping)
    assert want_flapping
    assert {(r.cluster_id, r.broker, r.day): r["count"] for r in names["leader_moves"].collect()} == dict(want_moves)
    assert len({c for c, _, _ in want_moves}) == 3  # every cluster took part, the real one too
