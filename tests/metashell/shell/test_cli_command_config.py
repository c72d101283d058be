"""A binary ``--command-config`` (random bytes, a keystore given by mistake) is refused in one
line with exit code 1, before anything connects, by every tool that takes one: the shell, the
dashboard, and ``kraftd quorum``. (Java's Properties.load would read keys out of it, and the tool
would then connect with none of the settings meant.)"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # processes

ROOT = Path(__file__).resolve().parents[3]
UNUSED = "127.0.0.1:9"  # never reached: the file is refused first


def run(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("content", [random.Random(24).randbytes(3000), b"security.protocol=SSL\n\x00\x00\n"],
                         ids=["random-bytes", "nul-bytes"])
def test_a_binary_command_config_is_refused_in_one_line(tmp_path: Path, content: bytes) -> None:
    config = tmp_path / "client.properties"
    config.write_bytes(content)
    commands = [
        ("metashell", ("metashell.cli", "--bootstrap-controller", UNUSED, "--command-config", str(config), "-c", "ls")),
        ("metashell", ("metashell.cli", "dash", "--bootstrap-controller", UNUSED, "--command-config", str(config))),
        ("kraftd", ("engine.tools.cli", "quorum", "--bootstrap-controller", UNUSED, "--command-config", str(config),
                    "describe", "--status")),
    ]
    for prog, argv in commands:
        done = run(*argv)
        assert (done.returncode, done.stdout, done.stderr.count("\n")) == (1, "", 1), (prog, done.stderr)
        assert done.stderr.startswith(f"{prog}: {config}, byte offset "), done.stderr
        assert "not a properties file: line " in done.stderr and "binary data, not text" in done.stderr
