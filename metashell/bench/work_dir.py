"""Where a bench writes: the --dir it was given, else a temporary folder removed at the end
(kept, and said, with --keep: the logs and archives a bench built are worth a look after a
surprising figure)."""

from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def bench_root(given: str | None, *, prefix: str, name: str, keep: bool) -> Iterator[Path]:
    """``given`` as a Path (left alone), else ``name`` inside a new temporary folder named from
    ``prefix``: removed on the way out, or printed as kept when ``keep``."""
    if given:
        yield Path(given)
        return
    temp = Path(tempfile.mkdtemp(prefix=prefix))
    root = temp / name
    try:
        yield root
    finally:
        if not keep:
            shutil.rmtree(temp, ignore_errors=True)
        else:
            print(f"kept: {root}")
