"""PySpark finds its data sources by themselves: at a session's first data source call it imports
every top-level ``pyspark_*`` module on the Python path and registers its ``DefaultSource``. This
one is metashell's ``format("kraft")`` (metashell.spark.datasource), so a session with metashell
installed reads ``spark.read.format("kraft")`` without ``metashell.spark.register``.

A module that fails to import here would fail every data source lookup of the session, so an
import error leaves no DefaultSource rather than raise.
"""

try:
    from metashell.spark.datasource import KraftDataSource as DefaultSource  # noqa: F401
except ImportError:  # pragma: no cover - metashell without pyspark's datasource API (pyspark < 4.0)
    pass
