"""The builder of Spark's class archive (metashell.export.class_archive): run detached, niced, as
``python -m metashell.export.class_archive_build ARCHIVE`` after an export that had no archive.

It starts a session of its own with ``-XX:+RecordDynamicDumpInfo``, builds a DataFrame of every
table kind (three rows of sample values of the kind's schema) and writes it in every format, so the
classes of an export's first DataFrame and write are loaded; then it has the JVM dump what it loaded
(``VM.cds dynamic_dump``) beside the archive and renames the dump into place, then its sidecar.
A failure is written to ``ARCHIVE.failed``, which the next export says once; the lock
(``ARCHIVE.building``) is freed either way.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from metashell.export.class_archive import QUIET_CDS, sidecar

RECORD_OPTIONS = f"-XX:+RecordDynamicDumpInfo {QUIET_CDS}"


def build(archive: Path) -> None:
    """Record Spark's classes as an export loads them, into ``archive`` (the builder process's work).
    Raises on failure; the lock is freed either way, and a failure is written beside the archive."""
    lock = archive.with_suffix(".building")
    try:
        _record(archive)
        archive.with_suffix(".failed").unlink(missing_ok=True)
    except BaseException as exc:
        archive.with_suffix(".failed").write_text(f"{type(exc).__name__}: {exc}\n")
        raise
    finally:
        lock.unlink(missing_ok=True)


def sample_value(t: Any) -> Any:
    """A value of a schemas.COLUMNS type."""
    if isinstance(t, tuple):
        return [sample_value(t[1])] if t[0] == "array" else {name: sample_value(ft) for name, ft in t[1]}
    return {"string": "x", "int": 1, "long": 1, "boolean": True, "double": 1.0}[t]


def sample_tables() -> list[Any]:
    """Three rows of sample values for every table kind."""
    from metashell.export.schemas import COLUMNS
    from metashell.export.tables import Table

    return [Table(kind, [name for name, _, _ in columns], [tuple(sample_value(t) for _, t, _ in columns)] * 3)
            for kind, columns in COLUMNS.items()]


def _record(archive: Path) -> None:
    from metashell.export import FORMATS, export, table_dataframe
    from metashell.export.spark_session import SMALL_EXPORT_JAVA_OPTIONS, import_pyspark, launch_session

    spark = launch_session(import_pyspark(), "local[*]", lambda line: None,
                           f"{SMALL_EXPORT_JAVA_OPTIONS} {RECORD_OPTIONS}")
    with tempfile.TemporaryDirectory(prefix="metashell-class-archive-") as tmp:
        for table in sample_tables():
            frame = table_dataframe(table, spark)
            for fmt in FORMATS:
                export(frame, Path(tmp), fmt, table=f"{table.kind}-{fmt}")
    part = archive.with_name(f"{archive.name}.{os.getpid()}.part")
    dynamic_dump(spark, part)
    size = part.stat().st_size
    os.replace(part, archive)
    recorded = sidecar(archive)
    part = recorded.with_name(f"{recorded.name}.{os.getpid()}.part")
    part.write_text(json.dumps({"size": size, "built_at_ms": int(time.time() * 1000)}) + "\n")
    os.replace(part, recorded)  # last: until it is there, the archive is not used
    spark.stop()


def dynamic_dump(spark: Any, path: Path) -> None:
    """``jcmd PID VM.cds dynamic_dump PATH`` from inside the JVM: its DiagnosticCommand MBean, called
    through the public MBeanServerConnection interface (the server's own class is not exported)."""
    gateway, jvm = spark.sparkContext._gateway, spark._jvm
    klass = jvm.java.lang.Class
    types = gateway.new_array(klass, 4)
    for i, name in enumerate(("javax.management.ObjectName", "java.lang.String", "[Ljava.lang.Object;",
                              "[Ljava.lang.String;")):
        types[i] = klass.forName(name)
    invoke = klass.forName("javax.management.MBeanServerConnection").getMethod("invoke", types)
    words = gateway.new_array(jvm.java.lang.String, 2)
    words[0], words[1] = "dynamic_dump", str(path)
    params = gateway.new_array(jvm.java.lang.Object, 1)
    params[0] = words
    signature = gateway.new_array(jvm.java.lang.String, 1)
    signature[0] = "[Ljava.lang.String;"
    call = gateway.new_array(jvm.java.lang.Object, 4)
    call[0] = jvm.javax.management.ObjectName("com.sun.management:type=DiagnosticCommand")
    call[1], call[2], call[3] = "vmCds", params, signature
    invoke.invoke(jvm.java.lang.management.ManagementFactory.getPlatformMBeanServer(), call)
    if not path.is_file():
        raise RuntimeError(f"the JVM wrote no archive at {path}")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m metashell.export.class_archive_build ARCHIVE\n")
        return 2
    try:
        os.nice(10)  # a builder in the background yields to what the user runs now
    except OSError:
        pass
    build(Path(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
