"""The `kraftd` commands: dump-log, storage, quorum, sim, start, and the benchmarks with their
load generators (kept here so that no production module carries benchmark hooks)."""
