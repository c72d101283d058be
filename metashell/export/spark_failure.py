"""A Spark job's failure as the one line a user reads.

A task of the kraft data source that meets damage raises our one-line error (the file and the
byte offset) on an executor; Spark hands it to the driver wrapped in its own: a Java stack trace
around the Python worker's traceback, whose last ``SomeError: message`` line is ours. That line
is what the user gets; any other failure gets the first line of what Spark said.
"""

from __future__ import annotations

import re

from metashell.export.spark_session import ExportError, first_line

# A Python traceback's last line: "pkg.mod.StorageError: /x/00000.log: byte offset 61: ..." (the
# class may be qualified; Spark 4 prints it as the worker raised it)
_RAISED = re.compile(r"^\s*(?:[\w.]+\.)?(\w*(?:Error|Exception)): (.+)$")
# Spark's own wrappers, which would only repeat the Python line or name the JVM's classes
_WRAPPERS = ("org.apache.spark", "py4j", "java.", "pyspark.errors", "PythonException", "SparkException",
             "Py4JJavaError", "AnalysisException", "Traceback")


def is_spark_failure(exc: BaseException) -> bool:
    """An exception from Spark (pyspark's own errors, py4j's, Connect's)."""
    module = type(exc).__module__ or ""
    return module.startswith(("pyspark", "py4j", "grpc"))


def spark_failure(exc: BaseException, doing: str) -> ExportError:
    """``doing: <the line>``: the Python error a task raised when there is one, else Spark's first line."""
    raised = _last_python_error(str(exc))
    return ExportError(f"{doing}: {raised if raised is not None else first_line(exc)}")


def _last_python_error(text: str) -> str | None:
    found = None
    for line in text.splitlines():
        match = _RAISED.match(line)
        if match and not match.group(1).startswith(_WRAPPERS) and not line.lstrip().startswith(_WRAPPERS):
            found = match.group(2).strip()
    return found
