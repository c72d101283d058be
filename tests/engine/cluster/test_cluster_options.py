"""``kraftd cluster`` options refused before anything is made: one line, exit 1, no directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cluster.processes import kraftd


@pytest.mark.parametrize("port", ["70000", "0", "http"])
def test_a_base_port_that_is_no_port_is_refused_before_the_directory_is_made(tmp_path: Path, port: str) -> None:
    state = tmp_path / "cluster"
    done = kraftd("cluster", "up", "--dir", str(state), "--base-port", port)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == [f"kraftd: argument --base-port: expected a TCP port from 1 to 65535, got '{port}'"]
    assert not state.exists()
