"""Spark Connect for real: a local Spark Connect server in a child process (its own JVM), and
``metashell export --remote sc://localhost:PORT`` talking to it over gRPC."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# processes, sockets and timers of their own: out of the fast tier
pytestmark = pytest.mark.slow

pytest.importorskip("pyspark.sql.connect.session", reason="pyspark's connect client is not installed "
                    "(pip install 'metashell[connect]')")

CHILD = textwrap.dedent('''
    import socket, sys
    from pathlib import Path
    probe = socket.socket(); probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]; probe.close()
    from pyspark.sql.connect.session import SparkSession as ConnectSession
    # A local Spark Connect server, as a cluster would run one (start-connect-server.sh).
    ConnectSession._start_connect_server("local[2]", {"spark.connect.grpc.binding.port": str(port),
                                                      "spark.ui.enabled": "false"})
    from metashell.cli import run
    log_dir, out = sys.argv[1], sys.argv[2]
    code = run(["export", "--log-dir", log_dir, "/brokers", "--out", out, "--format", "json",
                "--remote", f"sc://localhost:{port}"])
    # The export went through a Connect session, not the server's own local one.
    assert ConnectSession.getActiveSession() is not None, "no Spark Connect session was used"
    sys.exit(code)
''')


def test_export_through_spark_connect(tmp_path: Path) -> None:
    from metashell.demo.shell_demo import write_demo_log_dir

    log_dir = write_demo_log_dir(tmp_path / "log")
    out = tmp_path / "out"
    for _attempt in range(3):
        done = subprocess.run([sys.executable, "-c", CHILD, str(log_dir), str(out)], capture_output=True, text=True,
                              timeout=240, stdin=subprocess.DEVNULL, cwd=Path(__file__).resolve().parents[3])
        # The child probes a free port and hands it to the JVM: another process may take it in
        # between. That is the one failure worth another try, on a new port.
        if not _lost_the_port(done.stderr):
            break
    assert done.returncode == 0, done.stderr[-2000:]
    assert "exported 3 rows of brokers" in done.stdout
    rows = [json.loads(line) for f in sorted((out / "brokers").glob("part-*.json")) for line in f.read_text().splitlines()]
    assert sorted(r["broker_id"] for r in rows) == [1, 2, 3]


def _lost_the_port(stderr: str) -> bool:
    return any(sign in stderr for sign in ("Address already in use", "BindException", "Failed to bind"))
