"""The fleet ``metashell bench spark`` reads: N clusters' node directories, each with its own
``meta.properties`` (its own cluster id) and a ``__cluster_metadata-0`` of R records in
segments, with a snapshot every K records.

One cluster's log is written (the history of metashell/bench/log_history.py: a cluster of 6
brokers and 1,000 topics of 10 partitions, then NoOps, ISR and leader changes, fencing and
config changes in batches of 50), a snapshot taken every K records from an image kept as a
controller keeps it (a MetadataDelta replayed with each record). The other clusters' logs are
hard links to its files (copies where links are refused): the same bytes under N cluster ids.
Every task still decodes its files; the page cache serves all N from one copy, which a fleet
on disk would not (the bench measures decoding, not the disk).

``fleet.json`` at the root records what was made: a directory made with the same settings is
reused, one made with others is replaced.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from engine.image.image_writer import image_records
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import i16
from engine.storage.meta_properties import MetaProperties, write_meta_properties
from engine.storage.metadata_log import MetadataLog
from engine.storage.snapshot_writer import SnapshotId
from metashell.bench.log_history import (BATCH_RECORDS, BROKERS, START_MS, _creation, _fencing, _one, _Partitions,
                                         _register)

LOG_DIR = "__cluster_metadata-0"
FLEET_FILE = "fleet.json"


@dataclass(frozen=True)
class FleetSpec:
    clusters: int
    records: int  # a cluster's
    snapshot_every: int
    segment_bytes: int
    topics: int = 1_000
    partitions: int = 10
    seed: int = 1


def creation_records(topics: int, partitions: int = 10) -> int:
    """The records that create the cluster: metadata.version, the brokers registered and
    unfenced, each topic with its config and partitions."""
    return 1 + 2 * BROKERS + topics * (2 + partitions)


def cluster_id(index: int) -> str:
    return f"bench-cluster-{index:03d}"


def node_dirs(root: Path, spec: FleetSpec) -> list[Path]:
    return [root / cluster_id(n) for n in range(spec.clusters)]


def make_fleet(root: Path, spec: FleetSpec, progress: Callable[[str], None] = lambda line: None) -> list[Path]:
    """The fleet under ``root`` (reused when ``fleet.json`` says it was made with ``spec``);
    returns the node directories, one a cluster."""
    marker = root / FLEET_FILE
    if marker.is_file() and json.loads(marker.read_text()) == asdict(spec):
        progress(f"reused {spec.clusters} clusters of {spec.records:,} records in {root}")
        return node_dirs(root, spec)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    dirs = node_dirs(root, spec)
    write_cluster_log(dirs[0], spec, progress)
    for n, node in enumerate(dirs):
        if n:
            _link_tree(dirs[0] / LOG_DIR, node / LOG_DIR)
        write_meta_properties(node, MetaProperties(1, cluster_id(n), node_id=1))
    marker.write_text(json.dumps(asdict(spec)))
    progress(f"made {spec.clusters} clusters of {spec.records:,} records in {root}")
    return dirs


def write_cluster_log(node_dir: Path, spec: FleetSpec, progress: Callable[[str], None]) -> None:
    """``spec.records`` records into ``node_dir``/__cluster_metadata-0, a snapshot every
    ``spec.snapshot_every`` records (and none at offset 0: the first interval starts empty)."""
    rng = random.Random(spec.seed)
    state = _Partitions(spec.topics * spec.partitions, rng)
    topic_ids = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(spec.topics)]
    fenced = [False] * (BROKERS + 1)
    now_ms = START_MS
    delta = MetadataDelta(MetadataImage())
    next_snapshot, next_report = spec.snapshot_every, 1_000_000
    with MetadataLog.create(node_dir, segment_bytes=spec.segment_bytes, fsync_policy="never") as log:

        def append(batch: list) -> None:
            base = log.end_offset
            log.append(batch, epoch=1, timestamp_ms=now_ms)
            for i, record in enumerate(batch):
                delta.replay(record, base + i, 1, now_ms)

        append([m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(27))])
        append([_register(b) for b in range(1, BROKERS + 1)])
        append([_fencing(b, False) for b in range(1, BROKERS + 1)])
        for index in range(spec.topics):
            append(_creation(index, topic_ids[index], spec.partitions, state))
        while log.end_offset < spec.records:
            now_ms += 500
            size = min(BATCH_RECORDS, spec.records - log.end_offset, max(1, next_snapshot - log.end_offset))
            append([_one(rng, state, topic_ids, spec.partitions, fenced) for _ in range(size)])
            if log.end_offset >= next_snapshot:
                image = delta.apply()
                delta = MetadataDelta(image)
                log.write_snapshot(SnapshotId(log.end_offset, 1), image_records(image),
                                   last_contained_log_timestamp_ms=now_ms, now_ms=now_ms)
                next_snapshot = log.end_offset + spec.snapshot_every
            if log.end_offset >= next_report:
                progress(f"{log.end_offset:,} records written")
                next_report += 1_000_000


def _link_tree(source: Path, target: Path) -> None:
    target.mkdir(parents=True)
    for path in source.iterdir():
        try:
            os.link(path, target / path.name)
        except OSError:  # another file system, or one without hard links
            shutil.copy2(path, target / path.name)
