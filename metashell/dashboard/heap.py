"""The dashboard's heap: long-lived images kept out of the garbage collector's way."""

from __future__ import annotations


def settle_heap() -> None:
    """The history's images live as long as the dashboard: move them out of the collector's
    sight (gc.freeze), so a full collection never rescans them in the middle of a step."""
    import gc

    gc.collect()
    gc.freeze()
