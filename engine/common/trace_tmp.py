"""TEMPORARY (not committed): timestamps of the live path, one JSON line each, to $LIVE_TRACE_DIR/PID.jsonl."""
import json
import os
import time

_DIR = os.environ.get("LIVE_TRACE_DIR")
_file = None


def mark(kind: str, **kw) -> None:
    global _file
    if not _DIR:
        return
    if _file is None:
        _file = open(os.path.join(_DIR, f"{os.getpid()}.jsonl"), "a", buffering=1)
    kw["k"] = kind
    kw["t"] = time.monotonic()
    _file.write(json.dumps(kw) + "\n")


def _gc_cb(phase, info, _t=[0.0]):
    if phase == "start":
        _t[0] = time.monotonic()
    elif info["generation"] >= 1:
        mark("gc", gen=info["generation"], ms=(time.monotonic() - _t[0]) * 1000, collected=info["collected"])


if _DIR:
    import gc
    gc.callbacks.append(_gc_cb)


async def lag_monitor():
    import asyncio
    while True:
        t = time.monotonic()
        await asyncio.sleep(0.005)
        lag = (time.monotonic() - t - 0.005) * 1000
        if lag > 20:
            mark("loop_lag", ms=lag)
