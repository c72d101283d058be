"""The files of a KRaft log directory, as Kafka's `storage` and `raft` modules write them:
segments, snapshots (`.checkpoint`), the metadata log with recovery and retention,
leader-epoch checkpoints, `quorum-state`, `meta.properties`, `partition.metadata`, and
atomic small-file I/O."""
