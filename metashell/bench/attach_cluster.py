"""The clusters of ``metashell bench attach``: controller quorums that start at N partitions.

Creating a million partitions through the controller takes minutes (docs/performance.md, the
controller bench); an attachment only sees the snapshot it fetches. So each voter is formatted
as ``kraftd storage format --initial-controllers`` does (Kafka's server reads that format too),
and a snapshot of ``bench_image(partitions)`` (metashell.bench.export: topics of 100
partitions, three replicas out of six brokers) is written into its metadata log directory
before it starts. The log is empty, so both our FileRaftLog and Kafka's KafkaMetadataLog start
it at the snapshot's end, as after any snapshot download. The snapshot carries the node's own
finalized features (from the ``bootstrap.checkpoint`` its format wrote: the record versions
follow metadata.version) and, in its header batch, the voter set the format chose (kraft.version
1), as a snapshot a controller writes does.

Encoding a million partitions takes about half a minute; the records are encoded once per set of
features and only the header batch (the voters, whose ports differ per cluster) is made per
voter. The snapshot's batches carry leader epoch 0, as the format's own snapshot does: a node
whose quorum-state is still at epoch 0 then needs no epoch above it (Kafka's QuorumState would
move up to the log's epoch; kraftd's does not, and would stay in epoch 0 with a log in epoch 1).
"""

from __future__ import annotations

import struct
import time
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from engine.common.file_io import write_bytes_atomically
from engine.image.features_image import FeaturesImage
from engine.image.image_writer import image_records
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import load_snapshot
from engine.records.kio_codec import SnapshotHeaderRecord, i16, i64
from engine.records.metadata_record_serde import control_record, encode_record
from engine.records.record_batch import encode_entries
from engine.storage.snapshot_writer import BOOTSTRAP_FILE_NAME, PARTIAL_SUFFIX, SnapshotBuilder, SnapshotId
from engine.bench.controller import KafkaControllers
from engine.cluster.processes import ProcessCluster
from engine.admin.storage_format import parse_initial_controllers, voters_control_records
from metashell.bench.export import bench_image

SNAPSHOT_EPOCH = 0
METADATA_PARTITION_DIR = "__cluster_metadata-0"
_BATCH_HEAD = struct.Struct(">qi")  # base offset, batch length (the bytes after these 12)


class SnapshotSeed:
    """The bytes of a snapshot of ``bench_image(partitions)``, for each voter of a cluster."""

    def __init__(self, partitions: int, image: MetadataImage | None = None):
        """``image``: another image to write (a test's), ``partitions`` then only its size."""
        self.partitions = partitions
        self.encode_s = 0.0  # seconds spent encoding records, all feature sets together
        self._image = image if image is not None else bench_image(partitions)
        self._encoded: dict[tuple, tuple[bytes, int]] = {}  # features -> (bytes after the header batch, entries)

    def snapshot(self, features: dict[str, int], kraft_control: list, now_ms: int) -> tuple[bytes, SnapshotId]:
        """A whole snapshot file: a header batch with ``kraft_control`` (three entries with the
        voters), then the image's records with ``features``."""
        key = tuple(sorted(features.items()))
        if key not in self._encoded:
            started = time.perf_counter()
            image = replace(self._image, features=FeaturesImage(MappingProxyType(dict(features))))
            # encoded behind a header batch of the same entry count, which each voter's replaces
            builder = SnapshotBuilder(epoch=SNAPSHOT_EPOCH, last_contained_log_timestamp_ms=now_ms, now_ms=now_ms,
                                      kraft_control=kraft_control)
            records = 0

            def counted(items):
                nonlocal records
                for records, item in enumerate(items, 1):
                    yield item

            builder.add(counted(image_records(image)))
            data = builder.finish()
            _, length = _BATCH_HEAD.unpack_from(data, 0)
            self._encoded[key] = (data[12 + length:], 1 + len(kraft_control) + records + 1)  # header ... footer
            self.encode_s += time.perf_counter() - started
        rest, entries = self._encoded[key]
        header = SnapshotHeaderRecord(version=i16(0), last_contained_log_timestamp=i64(now_ms))
        head = encode_entries(0, [encode_record(control_record(header))] + [encode_record(r) for r in kraft_control],
                              epoch=SNAPSHOT_EPOCH, timestamp_ms=now_ms, control=True)
        return head + rest, SnapshotId(entries, SNAPSHOT_EPOCH)


def seed_node(seed: SnapshotSeed, metadata_dir: Path, initial_controllers: str, listener: str = "CONTROLLER") -> Path:
    """Write the seed's snapshot into a formatted controller's metadata log directory."""
    features = dict(load_snapshot(metadata_dir / BOOTSTRAP_FILE_NAME)[0].features)
    control = voters_control_records(parse_initial_controllers(initial_controllers), listener)
    data, snapshot_id = seed.snapshot(features, control, int(time.time() * 1000))
    partition_dir = metadata_dir / METADATA_PARTITION_DIR
    partition_dir.mkdir(exist_ok=True)
    # The format's 0-0 checkpoint goes, as Kafka's log deletes the snapshots before the one it
    # starts from (KafkaMetadataLog.truncateToLatestSnapshot). Left there, kraftd's leader takes it
    # for the earliest snapshot, the bootstrap one, sends no snapshot to a Fetch at offset 0, and
    # fails reading below its log start (reported with this bench).
    (partition_dir / SnapshotId(0, 0).file_name).unlink(missing_ok=True)
    return write_bytes_atomically(partition_dir / snapshot_id.file_name, data, temp_suffix=PARTIAL_SUFFIX, fsync=False)


class _Seeded:
    """A cluster whose voters are formatted, then seeded (``seed`` None: an empty cluster)."""

    seed: SnapshotSeed | None = None

    def _format(self, node_id: int, **how: object) -> None:
        super()._format(node_id, **how)  # type: ignore[misc]
        if self.seed is not None and how.get("initial_controllers"):
            seed_node(self.seed, self.root / f"meta{node_id}", str(how["initial_controllers"]))  # type: ignore[attr-defined]


class SeededKraftd(_Seeded, ProcessCluster):
    """``kraftd start`` voters."""

    def __init__(self, root: Path, settings: dict[str, object], seed: SnapshotSeed | None, voters: int = 3):
        super().__init__(root, settings, voters=voters)
        self.seed = seed


class SeededKafka(_Seeded, KafkaControllers):
    """Kafka's controllers (its server, ``process.roles=controller``, from its jars)."""

    def __init__(self, root: Path, libs: Path, heap: str, settings: dict[str, object], seed: SnapshotSeed | None,
                 voters: int = 3):
        super().__init__(root, libs, heap, settings)
        self.voters = voters
        self.seed = seed


__all__ = ["SeededKafka", "SeededKraftd", "SnapshotSeed", "seed_node"]
