"""Pause the cyclic garbage collector while an image is built."""

from __future__ import annotations

import gc


class collector_paused:
    """Pause the cyclic GC while an image is built: the heap only grows during a load,
    and rescanning it over and over would cost more than the load (see docs/performance.md).
    Nested pauses are fine: only the outermost turns the collector back on."""

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc) -> None:
        if self.was_enabled:
            gc.enable()


__all__ = ["collector_paused"]
