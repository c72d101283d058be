"""A kraft stream query in a process of its own, for the hard-kill test (no tests here):

    python -m tests.metashell.spark.stream_job OPTIONS_JSON OUT CHECKPOINT STOP_AT

runs ``readStream.format(<the test source>)`` with OPTIONS_JSON (load path under "path") into
Parquet at OUT with CHECKPOINT; prints ``end <next offset>`` after each micro-batch it sees
committed; stops cleanly once the stream's end reaches STOP_AT (-1: runs until killed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(options_json: str, out: str, checkpoint: str, stop_at: str) -> int:
    from metashell.export.spark_session import get_spark
    from tests.metashell.spark.stream_fixtures import register, start_query, stream_end

    spark = get_spark(master="local[1]")
    fmt = register(spark)
    options = json.loads(options_json)
    path = options.pop("path", None)
    reader = spark.readStream.format(fmt).options(**options)
    query = start_query(spark, reader.load(path) if path else reader.load(), Path(out), Path(checkpoint),
                        "stream_job")
    seen, target = -1, int(stop_at)
    while True:
        query.awaitTermination(0.2)  # raises if the query failed
        end = stream_end(query)
        if end != seen:
            seen = end
            print(f"end {end}", flush=True)
        if 0 <= target <= end:
            query.stop()
            print("stopped", flush=True)
            return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
