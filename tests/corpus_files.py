"""The files of the real Kafka corpus (../shared/corpus) that Kafka's own tools can open: every
segment (``.log``), snapshot (``.checkpoint`` in ``__cluster_metadata-0``) and bootstrap snapshot
(``bootstrap.checkpoint``). No tests here.

``$METASHELL_CORPUS`` points elsewhere (a worktree's ``../shared`` is not the repository's).
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import CORPUS as _BESIDE_THE_REPO

CORPUS = Path(os.environ.get("METASHELL_CORPUS") or _BESIDE_THE_REPO)
NO_CORPUS = f"real Kafka corpus not found at {CORPUS} (../shared/corpus beside the repo, or $METASHELL_CORPUS)"


def record_files() -> list[Path]:
    """Every file holding record batches, in path order; none without a corpus."""
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob("*") if p.is_file() and (
        p.suffix == ".log" or p.name == "bootstrap.checkpoint"
        or (p.suffix == ".checkpoint" and p.parent.name.startswith("__cluster_metadata"))))


def label(path: Path) -> str:
    """A file's name in test ids and messages: its path inside the corpus."""
    return str(path.relative_to(CORPUS))
