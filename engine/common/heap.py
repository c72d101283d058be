"""A tool's heap: long-lived images kept out of the garbage collector's way (the dashboard, the live shell)."""

from __future__ import annotations


def settle_heap() -> None:
    """A history's images live as long as the tool: move them out of the collector's sight
    (gc.freeze), so a full collection never rescans them in the middle of a step or an update
    (a million partitions' image costs about half a second to rescan)."""
    import gc

    gc.collect()
    gc.freeze()
