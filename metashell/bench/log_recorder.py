"""The recorder's share of ``metashell bench log``: an archive growing as a recorder grows it,
its history index brought up to date after each chunk as the recorder does (metashell/record/
record_index.py), so that the upkeep's cost a record is measured the way the recorder pays it.

The tail is the history's own mix (metashell/bench/log_history.py, another seed), appended in
batches of 50 to the archive's last segment, in chunks of ``chunk`` records (the recorder brings
its index up to date every 5 s: 5,000 records is a busy quorum's 5 s), with a snapshot every
``snapshot_every`` records taken from an image kept as the recorder keeps it (a MetadataDelta
replayed with each record), so that each update replays from a snapshot no older than the
recorder's would be. Only the index updates are timed (not the writing of the tail).
"""

from __future__ import annotations

import json
import random
import time
import uuid
from pathlib import Path

from engine.image.image_writer import image_records
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_loader import load_log_dir
from engine.storage.metadata_log import MetadataLog
from engine.storage.snapshot_writer import SnapshotId
from metashell.bench.log_history import BATCH_RECORDS, SEGMENT_BYTES, _one, _Partitions
from metashell.record.record_index import IndexKeeper


def record_tail(root: Path, records: int, *, chunk: int = 5_000, snapshot_every: int = 20_000,
                topics: int = 1_000, partitions: int = 10, seed: int = 2) -> tuple[float, int, IndexKeeper]:
    """Append ``records`` to the archive at ``root``; returns (seconds spent in index updates, updates, keeper)."""
    drawn = random.Random(1)  # write_big_history's draws (its default seed): the same partitions and topic ids
    state = _Partitions(topics * partitions, drawn)
    topic_ids = [uuid.UUID(int=drawn.getrandbits(128)) for _ in range(topics)]
    rng = random.Random(seed)
    fenced = [False] * 7
    image, _ = load_log_dir(root)
    delta = MetadataDelta(image)
    now_ms = max(image.provenance.last_timestamp_ms, 0)
    keeper = IndexKeeper(root, log=lambda line: print(f"  {line}", flush=True))
    spent, updates, since_snapshot = 0.0, 0, 0
    directory = root / "__cluster_metadata-0"
    with MetadataLog(directory, segment_bytes=SEGMENT_BYTES, fsync_policy="never") as log:
        end = log.end_offset + records
        while log.end_offset < end:
            target = min(log.end_offset + chunk, end)
            while log.end_offset < target:
                now_ms += 500
                batch = [_one(rng, state, topic_ids, partitions, fenced)
                         for _ in range(min(BATCH_RECORDS, target - log.end_offset))]
                base = log.end_offset
                log.append(batch, epoch=1, timestamp_ms=now_ms)
                for i, record in enumerate(batch):
                    delta.replay(record, base + i, 1, now_ms)
                since_snapshot += len(batch)
                if since_snapshot >= snapshot_every:
                    image = delta.apply()
                    delta = MetadataDelta(image)
                    log.write_snapshot(SnapshotId(log.end_offset, 1), image_records(image),
                                       last_contained_log_timestamp_ms=now_ms, now_ms=now_ms)
                    since_snapshot = 0
            log.flush()
            _manifest(root, log.end_offset)
            started = time.perf_counter()
            keeper.update_now()
            spent += time.perf_counter() - started
            updates += 1
    return spent, updates, keeper


def _manifest(root: Path, end: int) -> None:
    path = root / "archive.json"
    data = json.loads(path.read_text())
    snapshots = sorted(int(p.name.split("-")[0]) for p in (root / "__cluster_metadata-0").glob("*.checkpoint"))
    data.update(last_offset=end - 1, ranges=[[data["first_offset"], end - 1]], snapshots=[[s, 1] for s in snapshots])
    path.write_text(json.dumps(data))
