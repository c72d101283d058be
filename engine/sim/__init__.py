"""Simulations: the Raft quorum and the controllers, seeded and deterministic (kraftd sim)."""
