"""Spark Connect for real: a local Spark Connect server in a child process (its own JVM), and
``metashell export --remote sc://localhost:PORT`` talking to it over gRPC."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.spark_connect import run_beside_connect_server

# processes, sockets and timers of their own: out of the fast tier
pytestmark = pytest.mark.slow

pytest.importorskip("pyspark.sql.connect.session", reason="pyspark's connect client is not installed "
                    "(pip install 'metashell[connect]')")

CHILD = '''
    from metashell.cli import run
    log_dir, out = sys.argv[1], sys.argv[2]
    code = run(["export", "--log-dir", log_dir, "/brokers", "--out", out, "--format", "json",
                "--remote", f"sc://localhost:{port}"])
    # The export went through a Connect session, not the server's own local one.
    assert ConnectSession.getActiveSession() is not None, "no Spark Connect session was used"
    sys.exit(code)
'''


def test_export_through_spark_connect(tmp_path: Path) -> None:
    from metashell.demo.shell_demo import write_demo_log_dir

    log_dir = write_demo_log_dir(tmp_path / "log")
    out = tmp_path / "out"
    done = run_beside_connect_server(CHILD, [str(log_dir), str(out)], timeout=240,
                                     cwd=Path(__file__).resolve().parents[3])
    assert done.returncode == 0, done.stderr[-2000:]
    assert "exported 3 rows of brokers" in done.stdout
    rows = [json.loads(line) for f in sorted((out / "brokers").glob("part-*.json")) for line in f.read_text().splitlines()]
    assert sorted(r["broker_id"] for r in rows) == [1, 2, 3]
