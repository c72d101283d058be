"""A controller node's memory, its snapshot writer included (``kraftd bench controller``).

Our controllers write snapshots in a forked child (engine.raft.snapshot_writing). The child shares
its parent's pages until it touches them, and CPython touches every object it reads (reference
counts), so while it lives it holds private pages of its own: memory the node uses that the
parent's VmHWM does not show. A node's peak is therefore sampled as the parent's resident memory
plus its children's private pages (smaps_rollup), every ``interval_s``, beside the parent's own
high-water mark. Kafka's controllers have no such child, so for them it is their VmHWM.
"""

from __future__ import annotations

import threading
from pathlib import Path


def _status_kb(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(key):
                return int(line.split()[1])
    return 0


def children_of(pid: int) -> list[int]:
    """The process's children, from every thread's ``children`` list (Linux)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue  # the thread ended meanwhile
    return found


def private_kb(pid: int) -> int:
    """The process's pages that are its own (Private_Clean + Private_Dirty), in KiB."""
    total = 0
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                total += int(line.split()[1])
    return total


def node_kb(pid: int) -> int:
    """Now: the process's resident memory plus its children's private pages, in KiB."""
    used = _status_kb(pid, "VmRSS:")
    for child in children_of(pid):
        try:
            used += private_kb(child)
        except (OSError, ValueError):
            continue  # the child exited between the listing and the read
    return used


class NodeMemoryWatch:
    """Samples ``node_kb`` of each pid in a thread of its own until ``stop``; ``peaks_mb`` then
    gives each node's peak: the larger of the samples and the parent's own VmHWM."""

    def __init__(self, pids: dict[int, int], interval_s: float = 0.1) -> None:
        self.pids = dict(pids)
        self.interval_s = interval_s
        self._peak_kb = {node: 0 for node in self.pids}
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="node-memory", daemon=True)

    def start(self) -> "NodeMemoryWatch":
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stopped.is_set():
            self.sample_once()
            self._stopped.wait(self.interval_s)

    def sample_once(self) -> None:
        for node, pid in self.pids.items():
            try:
                self._peak_kb[node] = max(self._peak_kb[node], node_kb(pid))
            except (OSError, ValueError):
                continue  # the node exited: its last samples stand

    def stop(self) -> dict[int, float]:
        """Stop sampling; each node's peak in MB."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join()
        self.sample_once()
        peaks: dict[int, float] = {}
        for node, pid in self.pids.items():
            try:
                hwm = _status_kb(pid, "VmHWM:")
            except OSError:
                hwm = 0
            peaks[node] = max(hwm, self._peak_kb[node]) / 1024
        return peaks


__all__ = ["NodeMemoryWatch", "children_of", "node_kb", "private_kb"]
