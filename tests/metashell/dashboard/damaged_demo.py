"""The damaged demo log the dashboard's damage tests open (no tests here).

The demo log (offsets 0 to 23, the fifth batch holding 10 to 13) gets a snapshot at end offset 15,
then a byte flipped in that batch's records: the runs are -1..9 and 14..23.
"""

from __future__ import annotations

from pathlib import Path

from engine.image.image_writer import image_records
from engine.image.metadata_loader import load_log_dir
from engine.storage.log_reader import read_batches
from engine.storage.metadata_log import MetadataLog
from engine.storage.snapshot_writer import SnapshotId
from metashell.demo.shell_demo import write_demo_log_dir


def write_damaged_demo(directory: Path) -> Path:
    """The demo log written in ``directory``, a snapshot at end offset 15, a byte of the batch
    10..13 flipped; returns ``directory``."""
    write_demo_log_dir(directory)
    with MetadataLog(directory / "__cluster_metadata-0", fsync_policy="never") as log:
        log.write_snapshot(SnapshotId(15, 1), image_records(load_log_dir(directory, offset=14)[0]),
                           last_contained_log_timestamp_ms=1_767_225_605_000, now_ms=9)
    segment = directory / "__cluster_metadata-0" / "00000000000000000000.log"
    pos, batch = list(read_batches(segment))[4]
    data = bytearray(segment.read_bytes())
    data[pos + batch.size_bytes // 2] ^= 0xFF
    segment.write_bytes(bytes(data))
    return directory
