"""Benchmarks: every kraftd bench."""
