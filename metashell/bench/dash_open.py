"""``python -m metashell.bench.dash_open DIR_OR_SNAPSHOT``: open the dashboard headless, print
``painted`` once its first full paint is done, and quit (metashell.bench.dash times the process).

It opens as ``metashell dash`` does (History.open_log_dir or open_snapshot, the heap settled)
and runs the real app under Textual's test pilot; "painted" is printed when the app is idle
after mounting: every panel composed, laid out and drawn once."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path


async def _open(path: Path) -> None:
    from engine.common.heap import settle_heap
    from metashell.dashboard.app import DashboardApp
    from metashell.dashboard.history import History

    history = History.open_log_dir(path) if path.is_dir() else History.open_snapshot(path)
    settle_heap()
    app = DashboardApp(history)
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        print("painted", flush=True)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m metashell.bench.dash_open DIR_OR_SNAPSHOT", file=sys.stderr)
        return 2
    asyncio.run(_open(Path(argv[0])))
    sys.stdout.flush()
    os._exit(0)  # the counting process or thread is not waited for: the figure is the paint


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
