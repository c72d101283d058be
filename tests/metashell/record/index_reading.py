"""What ``log /`` reads from an archive's history index, for the index tests (no tests here)."""

from __future__ import annotations

from pathlib import Path

from metashell.history.history_index import IndexHistory
from metashell.history.query import path_query


def index_everything(root: Path) -> tuple:
    """Every item ``log /`` reads from the index, with the runs, gaps and settled offset it reports."""
    history = IndexHistory(root)
    try:
        return list(history.items(path_query("/"))), history.runs, history.gaps, history.settled
    finally:
        history.close()
