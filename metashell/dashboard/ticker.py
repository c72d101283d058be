"""What drives play mode: something that calls back every so often until it is stopped.

The dashboard plays on Textual's own timers (``IntervalTicker``, the default). Tests hand the
app a ``ManualTicker`` instead and call ``tick()`` themselves: play mode then runs one tick per
call, with no timer and no waiting on the wall clock.
"""

from __future__ import annotations

from typing import Callable, Protocol

from textual.message_pump import MessagePump


class Ticking(Protocol):
    """A running ticker: stop() ends it (a stopped one never calls back again)."""

    def stop(self) -> None: ...


class Ticker(Protocol):
    def start(self, interval_s: float, callback: Callable[[], None]) -> Ticking:
        """Call ``callback`` every ``interval_s`` seconds from now on, until stopped."""
        ...


class IntervalTicker:
    """Textual's timers: ``set_interval`` on ``pump`` (the screen that plays), so the callback runs
    on the app's event loop and the timer goes when the screen does."""

    def __init__(self, pump: MessagePump) -> None:
        self._pump = pump

    def start(self, interval_s: float, callback: Callable[[], None]) -> Ticking:
        return self._pump.set_interval(interval_s, callback)


class ManualTicker:
    """A ticker its owner advances: ``tick()`` is one interval elapsing. It keeps the interval it
    was last started with, so a test can check the cadence without waiting for it."""

    def __init__(self) -> None:
        self.interval_s: float | None = None
        self.starts = 0
        self._running: _ManualTicking | None = None

    def start(self, interval_s: float, callback: Callable[[], None]) -> Ticking:
        self.interval_s = interval_s
        self.starts += 1
        self._running = _ManualTicking(self, callback)
        return self._running

    @property
    def running(self) -> bool:
        return self._running is not None

    def tick(self) -> None:
        """One interval elapses: the running callback is called once."""
        if self._running is None:
            raise RuntimeError("the ticker is stopped: nothing to tick")
        self._running.callback()


class _ManualTicking:
    def __init__(self, ticker: ManualTicker, callback: Callable[[], None]) -> None:
        self._ticker = ticker
        self.callback = callback

    def stop(self) -> None:
        if self._ticker._running is self:  # an older handle stopped late leaves a newer one running
            self._ticker._running = None
