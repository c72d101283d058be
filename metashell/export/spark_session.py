"""The Spark session exports run in: the active one when there is one, else a new one.

``local[*]`` by default (no UI or progress bars, few shuffle partitions, Arrow transfers, and the
JVM's log kept off the terminal: metashell.export.spark_quiet); ``master="spark://host:7077"``
for a standalone cluster; ``remote="sc://host:15002"`` for Spark Connect.

``preflight()`` says in one line what is missing (pyspark, pyarrow, a Java runtime recent enough
for the installed pyspark) before any work; ``SparkStart`` starts the session in a thread, so a
front end loads its image meanwhile (metashell.export.spark_start).
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Callable

from engine.common.errors import MetadataError

# pyspark warns, on its first py4j call, that it does not support the installed pandas: exports
# hand Spark Arrow tables, never pandas frames, so the warning would only alarm.
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)

INSTALL = "pip install 'metashell[spark]'"
NO_PYSPARK = f"Spark export needs pyspark: {INSTALL}"
NO_PYARROW = f"Spark export needs pyarrow: {INSTALL}"
NO_JAVA = "Spark export needs a Java runtime"  # followed by what was found and how to get one
NO_CONNECT = ("Spark Connect (--remote) needs pyspark's connect client: "
              "pip install 'pyspark[connect]' (grpcio, grpcio-status, googleapis-common-protos, zstandard, pandas)")

# The session a local export runs in: no UI (its web server and port search cost start-up time
# and give an export nothing), no progress bars on the terminal, few shuffle partitions.
LOCAL_CONFIG = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # the kraft data source (metashell.spark) takes Spark's filters on offsets, times and types
    "spark.sql.python.filterPushdown.enabled": "true",
}
# A small export's JVM lives seconds: C2's compiles cost more CPU than they ever win back, on
# two cores they compete with the export itself, and a parallel collector's threads are idle.
# Not for large images (the rows' conversion and Parquet encoding run long enough for C2).
# docs/performance.md ("A small export") has the figures.
SMALL_EXPORT_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


# Where a class archive would have gone for the session of ours that started without one (see
# _new_session): an export that succeeds in it has one built (after_local_export).
missing_archive: Any = None

# A session a front end is starting while it loads the image (metashell.export.spark_start's
# SparkStart, which sets and clears this): get_spark() waits for it rather than start another.
_pending: Any = None


def set_pending(start: Any) -> None:
    global _pending
    _pending = start


def pending() -> Any:
    """The start a front end began and has not closed, if any."""
    return _pending


class ExportError(MetadataError):
    """An export that cannot run: pyspark or Java missing, a bad table name or format."""


def import_pyspark() -> Any:
    """The pyspark.sql module, or ExportError saying how to install it."""
    try:
        import pyspark.sql as sql
    except ImportError:
        raise ExportError(NO_PYSPARK) from None
    return sql


def preflight(remote: str | None = None) -> None:
    """Raise ExportError, one line, if pyspark, pyarrow or (without ``remote``) a Java runtime
    that the installed pyspark runs on is missing. Real imports: a pyspark that is there but
    cannot be imported is as missing as one that is not there."""
    from metashell.export.java_runtime import JavaProblem, check_java, needed_major

    import_pyspark()
    try:
        import pyarrow  # noqa: F401 - DataFrames are built from Arrow tables
    except ImportError:
        raise ExportError(NO_PYARROW) from None
    if remote is not None:
        return  # Spark Connect: the JVM is the server's
    from pyspark.version import __version__ as version

    try:
        check_java(version)
    except JavaProblem as exc:
        raise ExportError(f"{NO_JAVA} ({exc}): install a JDK {needed_major(version)} or newer "
                          "(e.g. apt install openjdk-17-jre-headless) and set JAVA_HOME") from None


def java_available() -> bool:
    """A java binary is where Spark's launcher looks (its version unchecked)."""
    from metashell.export.java_runtime import JavaProblem, find_java

    try:
        find_java()
    except JavaProblem:
        return False
    return True


def get_spark(master: str | None = None, remote: str | None = None,
              warn: Callable[[str], None] | None = None) -> Any:
    """A Spark Connect session for ``remote``; else the active SparkSession when no ``master``
    is asked for, or the one a front end is starting (metashell.export.spark_start); else a new
    one (see the module docstring). ``warn`` gets what Spark's JVM says that matters, one line
    each (default: ``metashell: warning: ...`` on stderr)."""
    if master is None and remote is None and _pending is not None:
        return _pending.session()
    return spark_now(master, remote, warn)


def spark_now(master: str | None = None, remote: str | None = None,
              warn: Callable[[str], None] | None = None, small: bool = False) -> Any:
    """``get_spark`` without looking for a pending start: the start itself runs this. ``small``:
    a new local JVM gets SMALL_EXPORT_JAVA_OPTIONS."""
    sql = import_pyspark()
    if remote is not None:
        try:
            from pyspark.sql.connect.session import SparkSession as ConnectSession
        except ImportError:
            raise ExportError(NO_CONNECT) from None
        # Spark Connect: the JVM is the server's; an explicit address wins over a local session.
        return ConnectSession.builder.remote(remote).getOrCreate()
    active = sql.SparkSession.getActiveSession()
    if active is not None and (master is None or active.sparkContext.master == master):
        return active
    preflight()
    return _new_session(sql, master or "local[*]", warn, SMALL_EXPORT_JAVA_OPTIONS if small else "")



def _new_session(sql: Any, master: str, warn: Callable[[str], None] | None, java_options: str) -> Any:
    """A new local session, its JVM mapping Spark's class archive when there is a whole one
    (metashell.export.class_archive); a JVM that does not start with it gets it removed and is started
    again without it. A session of ours started without one notes where one would go (``missing_archive``)."""
    from pyspark import SparkContext

    import metashell.export.class_archive as class_archive

    global missing_archive
    warn = warn or _default_warn()
    archive = None
    if SparkContext._gateway is None and master.startswith("local") and class_archive.enabled():
        try:
            archive = class_archive.archive_path()
        except OSError:
            archive = None  # nothing to key an archive on (an unreadable JDK or pyspark): start without
    if archive is not None and class_archive.usable(archive):
        try:
            return launch_session(sql, master, warn, f"{java_options} {class_archive.java_options(archive)}")
        except JvmStartError as exc:
            class_archive.discard(archive)
            warn(f"Spark's JVM did not start with the class archive {archive} ({exc.cause}): "
                 "removed it, starting without it")
    missing_archive = archive
    return launch_session(sql, master, warn, java_options)


class JvmStartError(ExportError):
    """Spark's JVM exited before its gateway was up; ``cause`` is what it said first."""

    def __init__(self, cause: str):
        super().__init__(f"Spark's JVM did not start: {cause}")
        self.cause = cause


def _default_warn() -> Callable[[str], None]:
    from metashell.export.spark_quiet import default_warn

    return default_warn


def launch_session(sql: Any, master: str, warn: Callable[[str], None], java_options: str) -> Any:
    """A new session on ``master``; a new JVM of ours with ``java_options`` unless this process has one."""
    from pyspark import SparkConf, SparkContext

    from metashell.export.spark_quiet import JvmDidNotStart, launch_quiet_gateway

    conf = SparkConf().setAppName("metashell-export").setMaster(master).setAll(list(LOCAL_CONFIG.items()))
    if not os.environ.get("PYSPARK_PYTHON"):
        # Python workers (the kraft data source's tasks) run this interpreter, with metashell and
        # pyarrow, not whatever ``python3`` is first on PATH (pyspark's SparkContext reads the
        # variable when it starts)
        os.environ["PYSPARK_PYTHON"] = sys.executable
    pump = None
    if SparkContext._gateway is None:  # a JVM of ours; else this process's JVM is reused
        try:
            gateway, pump = launch_quiet_gateway(conf, warn, java_options)
        except JvmDidNotStart as exc:
            raise JvmStartError(str(exc)) from None
        SparkContext._ensure_initialized(gateway=gateway, conf=conf)
    try:
        spark = sql.SparkSession.builder.config(conf=conf).getOrCreate()
    except Exception as exc:  # noqa: BLE001 - a Java stack trace is no message for a user
        raise ExportError(f"Spark did not start: {first_line(exc)}") from None
    spark.sparkContext.setLogLevel("ERROR")  # for a JVM started before ours, with its own log4j
    if pump is not None:
        pump.release()
    return spark


def after_local_export(say: Callable[[str], None]) -> None:
    """After an export succeeded in a session of ours that had no class archive: have one built
    in the background, so the next export starts quicker (metashell.export.class_archive). ``say``
    gets one line, ``note: ...`` or ``warning: ...``."""
    global missing_archive
    archive, missing_archive = missing_archive, None
    if archive is None:
        return
    import metashell.export.class_archive as class_archive

    class_archive.build_in_background(archive, say)


def first_line(exc: BaseException) -> str:
    """An exception as one line: Spark's carry Java stack traces."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
