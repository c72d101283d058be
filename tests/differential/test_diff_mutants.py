"""The differential test of partition changes kills the mutants issue 25 named, on every run.

Each patch in tests/differential/mutants/ plants one bug in our PartitionChangeBuilder
(engine/controller/partition_change.py) that no other test noticed before the differential test:
- ``epoch_bump_removed``: a replica leaving no longer bumps the leader epoch;
- ``last_known_leader_of_4_0``: the last known leader is kept by Kafka 4.0's rule (when the ISR
  empties) instead of 4.1's (when the partition loses its leader).
The patch is applied to a copy of the tree, and the property runs there against the newest Kafka's
classes with its named examples off: the random cases alone must find the bug and fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_peer.fixtures import HARNESS_VERSIONS

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
MUTANTS = sorted((Path(__file__).parent / "mutants").glob("*.patch"))
RUN_TIMEOUT_S = 900


def _copy_of_the_tree(where: Path) -> Path:
    copy = where / "tree"
    keep = shutil.ignore_patterns(".git", ".venv*", ".hypothesis", "__pycache__", ".pytest_cache", "*.egg-info")
    shutil.copytree(REPO, copy, ignore=keep)
    return copy


@pytest.mark.parametrize("patch", MUTANTS, ids=lambda p: p.stem)
def test_the_differential_test_kills_the_mutant(patch: Path, tmp_path: Path) -> None:
    tree = _copy_of_the_tree(tmp_path)
    applied = subprocess.run(["git", "apply", "--unsafe-paths", f"--directory={tree.relative_to('/')}", str(patch)],
                             cwd="/", capture_output=True, text=True)
    assert applied.returncode == 0, f"{patch.name} no longer applies: {applied.stderr}"
    env = {**os.environ, "PYTHONPATH": str(tree), "METASHELL_DIFF_NAMED_EXAMPLES": "0",
           "METASHELL_KAFKA_VERSIONS": ",".join(v for v in os.environ.get("METASHELL_KAFKA_VERSIONS", "").split(",")
                                                if v)}
    if not env["METASHELL_KAFKA_VERSIONS"]:
        del env["METASHELL_KAFKA_VERSIONS"]
    newest = HARNESS_VERSIONS[-1]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "tests/differential/test_diff_partition_change.py::test_the_record_is_kafkas",
                           "-k", newest], cwd=tree, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    out = done.stdout + done.stderr
    killed = f"FAILED tests/differential/test_diff_partition_change.py::test_the_record_is_kafkas[kafka-{newest}]"
    assert done.returncode == 1 and killed in out and f"Kafka {newest} builds" in out, out[-3000:]
