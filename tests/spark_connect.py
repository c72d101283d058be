"""A local Spark Connect server for the tests (no tests here): a child Python process starts one
in its own JVM on a free port, as a cluster would run one (start-connect-server.sh), then runs the
test's code against ``sc://localhost:{port}``."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

# the child's opening: ``port`` is the server's, ``ConnectSession`` the Connect client's session
_SERVER = textwrap.dedent('''
    import socket, sys
    probe = socket.socket(); probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]; probe.close()
    from pyspark.sql.connect.session import SparkSession as ConnectSession
    ConnectSession._start_connect_server("local[2]", {"spark.connect.grpc.binding.port": str(port),
                                                      "spark.ui.enabled": "false"})
''')


def run_beside_connect_server(body: str, args: list[str], *, timeout: float, cwd: Path,
                              env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``body`` (Python, indented or not; it sees ``port``, ``ConnectSession`` and ``sys``) in a
    child that first starts the server; its CompletedProcess (text)."""
    code = _SERVER + textwrap.dedent(body)
    for _attempt in range(3):
        done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, env=env, cwd=cwd)
        # The child probes a free port and hands it to the JVM: another process may take it in
        # between. That is the one failure worth another try, on a new port.
        if not any(sign in done.stderr for sign in ("Address already in use", "BindException", "Failed to bind")):
            break
    return done
