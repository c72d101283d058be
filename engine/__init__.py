"""The metashell engine: a KRaft implementation (codec, storage, quorum, controller)."""
