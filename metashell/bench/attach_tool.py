"""The attached tool of ``metashell bench attach``, in a process of its own (as a shell would be).

``python -m metashell.bench.attach_tool --bootstrap HOST:PORT,... --controllers ID@HOST:PORT,...``

1. *attach*: ``Attachment.start()``, ``wait_caught_up``, then the tool's part, the starting image
   and what came with it replayed into a growing MetadataHistory and the tree built over its
   newest image, and ``ls /image/topics/byName`` answered (the first answer), as the live shell
   does for its first command; then every topic's partitions decoded (the whole image, as a
   whole-image question needs). Prints one JSON line ``{"attached": ...}``: seconds from
   ``start()`` to caught up, to the first answer and to the whole image, the topics listed, the
   partitions, and how much this process's resident memory grew (VmRSS; the process held
   nothing big before). Then the
   heap is settled as the live dashboard settles it (gc.collect, gc.freeze: a full collection
   would otherwise rescan a million partitions' objects, about half a second, in the middle of
   an update), timed apart.
2. *follow*: woken by the attachment's ``on_update``, it drains, extends the history and looks
   the load's config up in the tree (``/configs/TOPIC/bench-attach-0/retention.ms``, as
   ``watch`` would re-read it). Every request number of the load (metashell.bench.attach_load)
   found in the drained records is stamped ``time.monotonic()`` once the tree shows it. Ends
   when standard input says ``stop N`` and request N was seen (or ``--grace-s`` later), or at EOF.
3. *split*: how the attach time divides, measured apart after the attachment is closed, on the
   same leader and snapshot: the FetchSnapshot chunks alone (the attachment's chunk size, the
   bytes only kept), then the attachment's own functions on those bytes alone: the index (its
   starting image) and the decoding of every topic. Prints ``{"followed": ...}`` and ``{"split": ...}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from engine.common.heap import settle_heap
from engine.image.metadata_history import MetadataHistory
from engine.image.metadata_image import MetadataImage
from engine.image.lazy_topics import decode_all
from engine.image.metadata_loader import LoadInfo, image_of_fetched_snapshot
from engine.net.kafka_client import KafkaClient
from engine.raft import raft_messages as rm
from engine.net.kafka_server import DEFAULT_MAX_FRAME_BYTES
from engine.raft.log_follower import ANONYMOUS
from engine.records.kio_codec import ErrorCode
from engine.storage.log_reader import LogEntry
from engine.storage.snapshot_writer import SnapshotId
from metashell.bench.attach_load import CONFIG_NAME, TOPIC_PREFIX, parse_controllers, request_of_value
from metashell.live.attach import SNAPSHOT_CHUNK_BYTES, AttachError, Attachment
from metashell.source import LIVE_WINDOW_RECORDS  # the live tools' window: a default load writes 30,000 records
from metashell.tree.nodes import resolve
from metashell.tree.root import build_tree

WATCHED = f"/configs/TOPIC/{TOPIC_PREFIX}0/{CONFIG_NAME}"


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class LiveTree:
    """The tool's state: a MetadataHistory grown by the drained batches, the tree over its newest image."""

    def __init__(self, bootstrap: str, image: MetadataImage, offset: int, batches: list[list[LogEntry]]):
        self.history = MetadataHistory.growing(LoadInfo(Path(bootstrap)), image, offset,
                                               window_records=LIVE_WINDOW_RECORDS)
        self.extend(batches)

    def extend(self, batches: list[list[LogEntry]]) -> None:
        if batches:
            self.history.extend(batches)

    def reset(self, image: MetadataImage, offset: int, batches: list[list[LogEntry]]) -> None:
        self.history.reset(image, offset)
        self.extend(batches)

    def tree(self) -> Any:
        image, info = self.history.image_at(offset=self.history.last_offset)
        return build_tree(image, info)

    def watched_value(self) -> str | None:
        try:
            return str(resolve(self.tree(), WATCHED).value())
        except Exception:  # noqa: BLE001 - not there yet (before the load made the topic)
            return None


def load_requests(batches: list[list[LogEntry]]) -> dict[int, tuple[int, int]]:
    """The load's request numbers among the ConfigRecords of ``batches``: each with its batch's
    first offset and its record's timestamp (the leader's wall clock when it appended it, ms)."""
    found: dict[int, tuple[int, int]] = {}
    for batch in batches:
        for entry in batch:
            message = entry.record.message
            if entry.record.type_name == "CONFIG_RECORD" and message.name == CONFIG_NAME \
                    and message.resource_name.startswith(TOPIC_PREFIX) and message.value is not None:
                number = request_of_value(message.value)
                if number is not None:
                    found.setdefault(number, (batch[0].offset, entry.timestamp_ms))
    return found


def _schedstat() -> tuple[float, float]:
    """This process's threads: seconds run on a CPU, seconds waited in the run queue (all threads)."""
    run = wait = 0
    for task in Path("/proc/self/task").glob("*/schedstat"):
        try:
            fields = task.read_text().split()
            run, wait = run + int(fields[0]), wait + int(fields[1])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended
    return run / 1e9, wait / 1e9


FIRST_QUESTION = "/image/topics/byName"  # `ls` of it: the first question `kraftd bench peer` asks both shells


def attach(bootstrap: str, timeout_s: float, wake: threading.Event) -> tuple[Attachment, LiveTree, dict]:
    """Attach as the live shell does and time its milestones from ``start()``: caught up (the
    snapshot indexed and the records after it replayed, to the first high watermark seen), the
    first answer (``ls /image/topics/byName`` from the tree over the newest image), and the
    whole image (every topic's partitions decoded, as a whole-image question needs)."""
    before = rss_mb()
    started = time.monotonic()
    attachment = Attachment(bootstrap, on_update=wake.set, trace=True)
    attachment.start()
    update = attachment.wait_caught_up(timeout_s)
    caught_up = time.monotonic()
    if update.reset is None:
        raise AttachError("caught up without a starting image")
    image, offset = update.reset
    live = LiveTree(bootstrap, image, offset, update.batches)
    names = resolve(live.tree(), FIRST_QUESTION).child_names()  # what the first prompt's `ls` prints
    answered = time.monotonic()
    first_rss = rss_mb() - before
    newest = live.history.image_at(offset=live.history.last_offset)[0]
    decode_all(newest.topics)  # a whole-image question: every partition decoded (the rest of the snapshot)
    partitions = newest.partition_count
    whole = time.monotonic()
    grown = rss_mb() - before
    settle_heap()  # as the live dashboard does before its first frame: no full collection rescans the image
    milestones = {name: at - started for name, at in attachment.milestones.items()}
    return attachment, live, {
        "milestones": milestones, "caught_up_s": caught_up - started, "first_answer_s": answered - started, "tree_s": answered - caught_up,
        "whole_image_s": whole - started, "total_s": whole - started, "topics_listed": len(names),
        "topics": len(newest.topics.by_name), "settle_s": time.monotonic() - whole,
        "rss_first_answer_mb": first_rss, "rss_growth_mb": grown, "partitions": partitions,
        "snapshot_offset": offset, "snapshot_epoch": image.provenance.last_epoch,
        "offset": live.history.last_offset, "leader_id": update.status.leader_id,
        "leader_epoch": update.status.leader_epoch}


def follow(attachment: Attachment, live: LiveTree, wake: threading.Event, grace_s: float) -> dict:
    seen: dict[int, float] = {}
    stop: list[int] = []  # the last request number, once the parent says stop

    def read_stdin() -> None:
        for line in sys.stdin:
            if line.startswith("stop"):
                stop.append(int(line.split()[1]))
                break
        else:
            stop.append(-1)
        wake.set()

    threading.Thread(target=read_stdin, daemon=True).start()
    lookups = resets = 0
    shown = None
    stop_at = None
    work_ms: list[float] = []  # per update with load records: drain, replay, tree lookup
    # per request: [the leader's append (monotonic s, from its wall-clock ms), the Fetch answer that
    # committed it reached the attachment, published, drained here, shown by the tree]
    trace: dict[int, list[float]] = {}
    answered: dict[int, tuple[float, float]] = {}  # batch first offset -> (answer arrived, published)
    wall_to_mono = time.monotonic() - time.time()  # one machine: both clocks are system-wide
    ran0, waited0 = _schedstat()
    attachment.take_trace()  # what came before the load
    while True:
        wake.wait(0.5)
        wake.clear()
        drained = time.monotonic()
        update = attachment.drain()
        for first, arrived, published in attachment.take_trace():
            answered[first] = (arrived, published)
        if update.status.error is not None:
            raise AttachError(update.status.error)
        if update.reset is not None:  # fell behind the leader's log start: the shell starts anew too
            resets += 1
            live.reset(*update.reset, update.batches)
        else:
            live.extend(update.batches)
        numbers = load_requests(update.batches)
        if numbers:
            shown = live.watched_value()
            lookups += 1
            now = time.monotonic()
            work_ms.append((now - drained) * 1000)
            for number, (first, appended_ms) in numbers.items():
                if number not in seen:
                    seen[number] = now
                    arrived, published = answered.get(first, (float("nan"), float("nan")))
                    trace[number] = [appended_ms / 1000 + wall_to_mono, arrived, published, drained, now]
        if stop and stop_at is None:
            stop_at = time.monotonic() + grace_s
        if stop and (stop[0] < 0 or stop[0] in seen or time.monotonic() > stop_at):
            break
    ran, waited = _schedstat()
    return {"seen": seen, "work_ms": work_ms, "lookups": lookups, "resets": resets, "shown": shown,
            "offset": live.history.last_offset, "trace": trace, "ran_s": ran - ran0, "waited_s": waited - waited0}


async def fetch_snapshot_alone(address: tuple[str, int], epoch: int, snapshot: SnapshotId,
                               chunk_bytes: int) -> tuple[float, bytes]:
    """The leader's snapshot downloaded in chunks of ``chunk_bytes`` asked for, timed."""
    client = KafkaClient(client_id="metashell-bench-attach", request_timeout_ms=30_000,
                         max_frame_bytes=max(DEFAULT_MAX_FRAME_BYTES, chunk_bytes + 65_536))
    data = bytearray()
    try:
        started = time.monotonic()
        while True:
            response = await client.send(address, rm.fetch_snapshot_request(
                None, ANONYMOUS, epoch, (snapshot.end_offset, snapshot.epoch), len(data), chunk_bytes), adapt=True)
            part = rm.only_partition(response)
            if response.error_code != ErrorCode.none or part is None or part.error_code != ErrorCode.none:
                raise AttachError(f"FetchSnapshot {snapshot} from {address[0]}:{address[1]} failed: "
                                  f"{ErrorCode(part.error_code if part else response.error_code).name}")
            data += bytes(part.unaligned_records or b"")
            if len(data) >= part.size:
                return time.monotonic() - started, bytes(data)
    finally:
        await client.close()


def split(address: tuple[str, int], epoch: int, snapshot: SnapshotId) -> dict:
    """Apart, on the same leader: the download alone, then the attachment's own functions on
    those bytes: indexed (the starting image), then every topic decoded."""
    fetch_s, data = asyncio.run(fetch_snapshot_alone(address, epoch, snapshot, SNAPSHOT_CHUNK_BYTES))
    started = time.monotonic()
    image = image_of_fetched_snapshot(data, snapshot, "the snapshot")
    indexed = time.monotonic()
    decode_all(image.topics)
    return {"fetch_s": fetch_s, "index_s": indexed - started, "decode_s": time.monotonic() - indexed,
            "replay_s": time.monotonic() - started, "bytes": len(data), "partitions": image.partition_count}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m metashell.bench.attach_tool")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--controllers", required=True, help="ID@HOST:PORT,... (to find the leader for the split)")
    parser.add_argument("--attach-timeout-s", type=float, default=300.0)
    parser.add_argument("--grace-s", type=float, default=10.0)
    args = parser.parse_args(argv)
    addresses = parse_controllers(args.controllers)
    wake = threading.Event()
    try:
        attachment, live, attached = attach(args.bootstrap, args.attach_timeout_s, wake)
        print(json.dumps({"attached": attached}), flush=True)
        try:
            followed = follow(attachment, live, wake, args.grace_s)
        finally:
            attachment.close()
        print(json.dumps({"followed": followed}), flush=True)
        status = attachment.status
        snapshot = SnapshotId(attached["snapshot_offset"] + 1, attached["snapshot_epoch"])
        if status.leader_id in addresses and attached["snapshot_offset"] >= 0:
            print(json.dumps({"split": split(addresses[status.leader_id], status.leader_epoch, snapshot)}), flush=True)
        else:
            print(json.dumps({"split": None}), flush=True)
    except (AttachError, OSError) as err:
        print(json.dumps({"failed": str(err)}), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
