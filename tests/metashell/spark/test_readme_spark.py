"""README's "Ask many clusters at once, in Spark" block, run as written on an archive named
``history`` (written as the recorder writes one), its output held against what was recorded."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from metashell.record.archive import Archive
from tests.metashell.record.archive_fixtures import FakeLeaderLog

README = Path(__file__).resolve().parents[3] / "README.md"
CLUSTER = "ReadmeSparkCluster0000A"


def _readme_block() -> str:
    section = README.read_text().split("## Ask many clusters at once, in Spark", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_spark_block_reads_the_archive(spark, tmp_path) -> None:
    leader = FakeLeaderLog()
    archive = Archive(tmp_path / "history", segment_bytes=1024).open()
    archive.set_cluster_id(CLUSTER)
    for _ in range(8):
        archive.append(leader.append(3))  # 24 ConfigRecords: topics t0, t3, ..., keys k0-k2
    archive.commit()
    archive.close()
    # Spark's Python workers resolve a relative path against the JVM's directory (where the
    # session started, as Spark's own file readers do): the shared session started elsewhere
    code = _readme_block().replace('load("history")', f'load("{tmp_path / "history"}")')
    assert code.count(str(tmp_path)) == 2

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {})
    text = out.getvalue()
    assert re.search(rf"\|\s*{CLUSTER}\s*\|\s*CONFIG_RECORD\s*\|\s*24\s*\|", text), text
    # the config table (its first 20 rows): t15's k2 set to 17 from nothing
    assert re.search(rf"\|\s*{CLUSTER}\s*\|\s*t15\s*\|\s*k2\s*\|\s*NULL\s*\|\s*17\s*\|", text), text
