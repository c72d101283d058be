"""Without the real Kafka corpus (../shared/corpus), the tests that read it skip saying why on a
developer's machine, and fail under CI=true, as the Kafka tests do: CI must prove what the
README claims. Real test files of the suite run in a pytest of their own, with
$METASHELL_CORPUS pointing at a directory that does not exist. They ask for the corpus in each
way tests/conftest.py offers (the ``corpus`` marker, the ``corpus`` fixture, ``corpus_params``,
``corpus_file``); each of those marks the test ``corpus``, which is what the rule acts on."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# a pytest process of its own: out of the fast tier
pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parent
PROBED = [
    "engine/storage/test_small_files.py",  # marked corpus (the whole module)
    "engine/storage/test_corpus.py",  # corpus_params, and the corpus fixture
    "engine/tools/test_dump_log.py::test_skip_record_metadata",  # corpus_file
    "engine/admin/test_storage_format.py::test_bootstrap_checkpoint_matches_corpus",  # corpus_file, parametrised
]


def _outcomes(out: str) -> dict[str, int]:
    """pytest's last summary line as counts: {"skipped": 7, "error": 7, ...} (plural folded)."""
    last = out.strip().splitlines()[-1]
    return {kind.rstrip("s"): int(n) for n, kind in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected)",
                                                                 last)}


def _run_without_corpus(tmp_path: Path, ci: str) -> tuple[subprocess.CompletedProcess, str]:
    missing = tmp_path / "no-corpus-here"
    env = {**os.environ, "CI": ci, "METASHELL_CORPUS": str(missing), "PYTHONPATH": str(TESTS.parent)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-o", "addopts=", "-q", "-rsE", "-p", "no:cacheprovider",
                           *(str(TESTS / p) for p in PROBED)],
                          cwd=TESTS.parent, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=600)
    return done, str(missing)


@pytest.mark.parametrize("ci", ["", "true"])
def test_without_the_corpus_its_tests_skip_or_fail_under_ci(tmp_path: Path, ci: str) -> None:
    done, missing = _run_without_corpus(tmp_path, ci)
    out = done.stdout + done.stderr
    counts = _outcomes(out)
    assert f"real Kafka corpus not found at {missing}" in out, out[-3000:]
    assert counts.get("passed", 0) == 0 and counts.get("failed", 0) == 0, out[-3000:]
    if ci:
        # each test an error at its setup, saying why in one line (no traceback)
        assert done.returncode == 1 and counts.get("error", 0) >= len(PROBED), out[-3000:]
        assert "skipped" not in counts and "CI=true requires it" in out and "Traceback" not in out, out[-3000:]
    else:
        assert done.returncode == 0 and counts.get("skipped", 0) >= len(PROBED), out[-3000:]
        assert "error" not in counts, out[-3000:]
