"""The files of the real Kafka corpus (tests/conftest.py's CORPUS: ../shared/corpus, or
$METASHELL_CORPUS) that Kafka's own tools can open: every segment (``.log``), snapshot
(``.checkpoint`` in ``__cluster_metadata-0``) and bootstrap snapshot (``bootstrap.checkpoint``).
No tests here.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import CORPUS


def record_files() -> list[Path]:
    """Every file holding record batches, in path order; none without a corpus."""
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob("*") if p.is_file() and (
        p.suffix == ".log" or p.name == "bootstrap.checkpoint"
        or (p.suffix == ".checkpoint" and p.parent.name.startswith("__cluster_metadata"))))


def label(path: Path | None) -> str:
    """A file's name in test ids and messages: its path inside the corpus."""
    return "no-corpus" if path is None else str(path.relative_to(CORPUS))
