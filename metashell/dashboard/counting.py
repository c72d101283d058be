"""The whole-image counts of a big lazily loaded image, made in the background (issue 26).

A snapshot opened lazily (engine.image.lazy_topics) answers before its partitions are decoded.
The dashboard's first paint needs only what is on screen: the partition table's visible rows
(metashell.dashboard.partition_view), the brokers and the controller. Three of its numbers,
though, are over every partition: each broker's leaders and replicas, the controller's partition
counts (offline, imbalanced, with ELR, with an empty ISR) and the under-min-ISR series. For an
image with more than BACKGROUND_PARTITIONS partitions still in the file, ``count_whole_image``
makes them in the background (``start_counting``: a forked process, which decodes its copy of
the snapshot on the other core, else a thread), started after the screen's first paint: every
topic is decoded there, then counted. Until it is done the panels say "counting…" and show no
number: a partial count is never on screen as if it were the total.

Below that size the counts are made where they are needed, as for an eagerly loaded image: the
decoding costs less than a frame.

The results are per topic object (the caches of panels and of the controller metrics), so a
frame the user stepped to meanwhile, which shares every topic a batch did not touch, is served
from them as well.
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

from engine.controller.controller_metrics import PartitionCounts, TopicCounts, topic_counts
from engine.image.lazy_topics import decode_all, pending_partition_records
from engine.image.metadata_image import MetadataImage

# Partitions not decoded yet past which the counts are made in the background: ~0.2 s of decoding
BACKGROUND_PARTITIONS = 30_000


def pending_partitions(image: MetadataImage) -> int:
    """Partitions of ``image`` still in the file (laid-out counts: see pending_partition_records)."""
    total = 0
    for topic in image.topics.by_id.values():
        pending = pending_partition_records(topic.partitions)
        if pending is not None:
            total += pending
    return total


def counted_in_background(image: MetadataImage) -> bool:
    """Whether ``image``'s whole-image counts are to be made in the background."""
    return pending_partitions(image) > BACKGROUND_PARTITIONS


@dataclass(frozen=True, slots=True)
class WholeImageCounts:
    """What the background made, for the image it was given and every image sharing its topics."""

    image: MetadataImage
    leadership: dict[int, tuple]  # panels' per-topic leadership entries (panels.seed_leadership)
    topic_counts: TopicCounts  # the controller metrics' per-topic counts, warmed on ``image``
    partition_counts: dict[int, tuple]  # id(topic) -> (topic, its partitions): PartitionView's exact counts
    under_base: int | None  # the source's starting image's under-min-ISR total (None: it keeps none)


def _per_topic(image: MetadataImage, source: Any) -> tuple[list[tuple], int | None]:
    """(leaders by broker, replicas by broker, PartitionCounts, partitions) per topic in
    ``image.topics.by_id`` order, plain data; and the source's under-min-ISR base."""
    from metashell.dashboard import panels

    decode_all(image.topics)
    count_base: Callable[[], int] | None = getattr(source, "count_under_base", None)
    under_base = count_base() if count_base is not None and not getattr(source, "under_counted", True) else None
    per_topic = []
    for topic in image.topics.by_id.values():
        leads, hosts = panels.leadership_entries_of(topic)
        per_topic.append((dict(leads), dict(hosts), tuple(topic_counts(topic)), len(topic.partitions)))
    return per_topic, under_base


def _assemble(image: MetadataImage, per_topic: list[tuple], under_base: int | None) -> WholeImageCounts:
    """The counts keyed by this process's topic objects (``image`` is the one that was counted)."""
    topics = list(image.topics.by_id.values())
    if len(topics) != len(per_topic):
        raise ValueError(f"counted {len(per_topic)} topics of an image of {len(topics)}")
    leadership, counts, partitions = {}, {}, {}
    for topic, (leads, hosts, numbers, size) in zip(topics, per_topic):
        key = id(topic)
        leadership[key] = (topic, (Counter(leads), Counter(hosts)))
        counts[key] = (topic, PartitionCounts(*numbers))
        partitions[key] = (topic, size)
    return WholeImageCounts(image, leadership, TopicCounts.seeded(counts), partitions, under_base)


def count_whole_image(image: MetadataImage, source: Any) -> WholeImageCounts:
    """Decode every topic of ``image`` and make its counts, here; ``source``: the frame source,
    whose starting image's under-min-ISR total is counted too when it keeps one (History).
    Reads immutable images only: run it on any thread."""
    return _assemble(image, *_per_topic(image, source))


def _detach_from_terminal() -> None:
    """The child never speaks to the terminal, and holds none of the parent's standard streams
    open (a caller reading the parent's output to its end would wait for the child too)."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


class Counting:
    """A count under way: ``stop`` ends its process (the app quits: its seconds of decoding and
    its memory go with it), or lets a thread's result be dropped."""

    def __init__(self, pid: int | None = None) -> None:
        self.pid = pid
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)  # it holds nothing worth a clean end: numbers in memory
            except (ProcessLookupError, PermissionError):
                pass  # already ended (its answer was read and it was waited for)


def start_counting(image: MetadataImage, source: Any,
                   deliver: Callable[[WholeImageCounts | None, Exception | None], None], *,
                   fork: bool = True) -> Counting:
    """Count ``image`` in the background and hand the result (or the error) to ``deliver``, which
    is called on a thread of this process (post a message from it).

    In a forked process where the platform forks: the decoding costs seconds of pure Python,
    and on a thread of this process it would hold the interpreter lock against the app (a step
    took seconds while it ran); the child uses the other core, and this process's image stays
    as lazy as it was (its memory too). The child decodes its copy of the snapshot's bytes and
    sends back plain numbers per topic, in the image's topic order. Elsewhere, or with ``fork``
    False (a live source: its feed's thread may hold a lock the child would wait on forever), a
    thread."""
    def on_thread(work: Callable[[], WholeImageCounts]) -> None:
        def run() -> None:
            try:
                counts = work()
            except Exception as exc:  # noqa: BLE001 - handed over: the screen says it in one line
                deliver(None, exc)
                return
            deliver(counts, None)
        threading.Thread(target=run, name="metashell-counting", daemon=True).start()

    if not fork or not hasattr(os, "fork"):
        on_thread(lambda: count_whole_image(image, source))
        return Counting()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: count, send, and leave without running the parent's exit handlers
        code = 0
        try:
            os.close(read_end)
            _detach_from_terminal()
            try:
                payload = pickle.dumps(("counts", _per_topic(image, source)), protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException as exc:  # noqa: BLE001 - sent to the parent, which says it
                payload = pickle.dumps(("error", f"{type(exc).__name__}: {exc}"))
                code = 1
            with os.fdopen(write_end, "wb") as out:
                out.write(payload)
        finally:
            os._exit(code)
    os.close(write_end)

    handle = Counting(pid)

    def receive() -> WholeImageCounts:
        with os.fdopen(read_end, "rb") as pipe:
            data = pipe.read()
        os.waitpid(pid, 0)
        handle.pid = None
        if not data:
            raise RuntimeError("stopped" if handle.stopped else "the counting process ended without an answer")
        kind, value = pickle.loads(data)
        if kind == "error":
            raise RuntimeError(value)
        return _assemble(image, *value)

    on_thread(receive)
    return handle


__all__ = ["BACKGROUND_PARTITIONS", "WholeImageCounts", "count_whole_image", "counted_in_background",
           "pending_partitions", "start_counting", "Counting"]
