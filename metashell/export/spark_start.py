"""A Spark session started in a thread, while the caller loads the image it will export.

A local session costs seconds (two JVM starts: Spark's launcher, then the driver); loading an
image, attaching to a quorum and building the rows cost about as much, and neither needs the
other. A front end starts this first and goes on; the export's ``get_spark()`` then waits for
the pending start (``pending()``), so the export costs the slower of the two, not their sum,
and an error of the front end's own (a path not in the tree) does not wait for Spark at all.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable

from metashell.export import spark_session
from metashell.export.spark_session import ExportError, first_line, pending, spark_now
# A log directory or snapshot under this many bytes makes a small export (see SparkStart's small)
SMALL_SOURCE_BYTES = 64 << 20


def is_small(path: Path) -> bool:
    """Whether a log directory's files, or a snapshot file, add up to under SMALL_SOURCE_BYTES
    (stopping at the first bytes past it: a large directory is not walked to its end)."""
    if path.is_file():
        return path.stat().st_size < SMALL_SOURCE_BYTES
    total = 0
    for child in path.rglob("*"):
        total += child.stat().st_size if child.is_file() else 0
        if total >= SMALL_SOURCE_BYTES:
            return False
    return True


class SparkStart:
    """``spark_now(master, remote, warn, small)`` in a daemon thread: a process that exits on an error of
    its own does not wait for Spark (its JVM ends with it). Spark Connect starts at once: it has
    no JVM of its own to wait for. Use as a context manager: the start is pending inside."""

    def __init__(self, master: str | None = None, remote: str | None = None,
                 warn: Callable[[str], None] | None = None, small: bool = False):
        self._args = (master, remote, warn, small)
        self._spark: Any = None
        self._error: ExportError | None = None
        self._thread = threading.Thread(target=self._start, name="metashell-spark-start", daemon=True)

    def __enter__(self) -> SparkStart:
        if self._args[1] is not None:
            self._start()
        else:
            self._thread.start()
        spark_session.set_pending(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if pending() is self:
            spark_session.set_pending(None)

    def _start(self) -> None:
        try:
            self._spark = spark_now(*self._args)
        except ExportError as exc:
            self._error = exc
        except Exception as exc:  # noqa: BLE001 - whatever Spark raises is one line for the user
            self._error = ExportError(f"Spark did not start: {first_line(exc)}")

    def started(self) -> bool:
        """Whether the start is under way (or done): a thread of its own, or Spark Connect's at once."""
        return self._thread.ident is not None or self._spark is not None or self._error is not None

    def session(self) -> Any:
        """The session, once started, made the active one of the calling thread; or the
        ExportError that stopped it."""
        if self._thread.ident is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        activate(self._spark)
        return self._spark


def activate(spark: Any) -> None:
    """Make ``spark`` the active session of this thread: a session is active in the thread that
    built it (in its JVM thread too, py4j pinning one to each Python thread)."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:  # Spark Connect: a thread-local of the client
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        ConnectSession._set_default_and_active_session(spark)
        return
    from pyspark.sql import SparkSession

    java_class = getattr(SparkSession, "_get_j_spark_session_class", None)  # pyspark 4; 3.5 has one class
    SparkSession._activeSession = spark
    (java_class(jvm) if java_class else jvm.SparkSession).setActiveSession(spark._jsparkSession)
