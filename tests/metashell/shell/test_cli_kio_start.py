"""The console command imports kio with Hypothesis hidden, and Hypothesis stays importable after."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_kio_registers_no_strategies_and_hypothesis_still_imports() -> None:
    probe = ("import sys; from metashell import cli; cli._without_kio_strategies(); "
             "import kio.static._phantom as phantom, engine.records.metadata_records; "
             "assert phantom.hypothesis is None, 'kio saw hypothesis'; "
             "import hypothesis.strategies as st; print(st.integers(0, 1).example() in (0, 1))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert (done.returncode, done.stdout.strip()) == (0, "True"), done.stderr[-2000:]


@pytest.mark.slow
def test_an_already_imported_hypothesis_is_left_alone() -> None:
    probe = ("import hypothesis.strategies; from metashell import cli; cli._without_kio_strategies(); "
             "import kio.static._phantom as phantom; print(phantom.hypothesis is not None)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert (done.returncode, done.stdout.strip()) == (0, "True"), done.stderr[-2000:]
