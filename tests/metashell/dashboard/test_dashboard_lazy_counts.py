"""The dashboard over a lazily loaded snapshot (issue 26): the same rows and counts as over the
eagerly loaded image, and, while the whole-image counts are still being made in the background,
no number where a count goes — "counting…" until the whole count is in."""

from __future__ import annotations

import asyncio
import gc
import re
import threading
import uuid
from pathlib import Path

import pytest

from engine.common.config_resource import ConfigResourceType
from engine.controller.controller_metrics import controller_metrics
from engine.image import metadata_loader
from engine.image.image_writer import image_records
from engine.image.lazy_topics import undecoded_topics
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import i32
from engine.storage.metadata_log import MetadataLog
from engine.storage.snapshot_writer import SnapshotId
from metashell.dashboard import counting, panels
from metashell.dashboard.app import DashboardApp
from metashell.dashboard.history import History
from metashell.dashboard.partition_view import PartitionView
from metashell.dashboard.widgets import BrokersPanel, Charts, PartitionsPanel
from metashell.dashboard.widgets.controller_panel import ControllerPanel

TOPICS = 9


def _topic_id(n: int) -> uuid.UUID:
    return uuid.UUID(int=n + 1)


def _partition(n: int, p: int) -> m.PartitionRecordV2:
    """Partitions of every kind the counts tell apart: leaderless, under min ISR, with an ELR
    and an empty ISR, reassigning, led by a replica that is not the preferred one."""
    leader = -1 if (n + p) % 5 == 0 else (2 if p % 4 == 1 else 1)
    isr = () if (n, p) == (4, 2) else ((1,) if p % 3 == 0 else (1, 2, 3))
    return m.PartitionRecordV2(
        partition_id=i32(p), topic_id=_topic_id(n), replicas=(i32(1), i32(2), i32(3)),
        isr=tuple(i32(b) for b in isr), removing_replicas=(i32(3),) if (n, p) == (6, 1) else (),
        adding_replicas=(), leader=i32(leader), leader_epoch=i32(p), partition_epoch=i32(0),
        directories=(None, None, None), eligible_leader_replicas=(i32(2),) if (n, p) == (4, 2) else None)


def _records() -> list:
    records: list = [m.FeatureLevelRecordV0(name="metadata.version", feature_level=27)]
    for broker in (1, 2, 3):
        records.append(m.RegisterBrokerRecordV3(broker_id=i32(broker), is_migrating_zk_broker=False,
                                                incarnation_id=uuid.UUID(int=100 + broker), broker_epoch=broker,
                                                end_points=(), features=(), rack=None, fenced=broker == 3,
                                                in_controlled_shutdown=False, log_dirs=()))
    records.append(m.ConfigRecordV0(resource_type=ConfigResourceType.BROKER.value, resource_name="",
                                    name="min.insync.replicas", value="2"))
    for n in range(TOPICS):
        records.append(m.TopicRecordV0(name=f"t{n}", topic_id=_topic_id(n)))
        records.extend(_partition(n, p) for p in range(n + 3))
    return records


def _log_dir(tmp_path: Path) -> Path:
    """A snapshot (our writer: Kafka's grouped shape), then batches touching t2, t5 and a new topic."""
    records = _records()
    delta = MetadataDelta(MetadataImage())
    for record in records:
        delta.replay(record)
    with MetadataLog.create(tmp_path, fsync_policy="never") as log:
        log.truncate_fully_and_start_at(len(records))  # the history starts at the snapshot
        log.write_snapshot(SnapshotId(len(records), 1), image_records(delta.apply()),
                           last_contained_log_timestamp_ms=1000, now_ms=9)
        log.append([m.PartitionChangeRecordV0(partition_id=i32(1), topic_id=_topic_id(2), isr=(i32(1),))],
                   epoch=1, timestamp_ms=2000)
        log.append([m.PartitionChangeRecordV0(partition_id=i32(0), topic_id=_topic_id(5), leader=i32(-1))],
                   epoch=1, timestamp_ms=3000)
        log.append([m.TopicRecordV0(name="t99", topic_id=_topic_id(99)), _partition(99, 0)],
                   epoch=1, timestamp_ms=4000)
    return tmp_path


def _history(directory: Path, monkeypatch: pytest.MonkeyPatch, *, lazy: bool) -> History:
    if lazy:
        history = History.open_log_dir(directory)
        assert undecoded_topics(history.replay.start_image.topics) > 0  # the premise: a lazy image
        return history
    with monkeypatch.context() as patched:
        patched.setattr(metadata_loader, "index_snapshot", lambda buf, where, **options: None)
        patched.setattr(metadata_loader, "index_snapshot_on_two", lambda buf, where: None)
        history = History.open_log_dir(directory)
    assert undecoded_topics(history.replay.start_image.topics) == 0
    return history


def _shown(app: DashboardApp) -> dict:
    """Everything the panels show that is counted over the partitions."""
    screen = app.main
    return {"rows": list(screen.query_one(PartitionsPanel).all_rows),
            "subtitle": screen.query_one(PartitionsPanel).border_subtitle,
            "brokers": list(screen.query_one(BrokersPanel).table.rows),
            "brokers_subtitle": screen.query_one(BrokersPanel).border_subtitle,
            "metrics": screen.query_one(ControllerPanel).metrics,
            "controller": screen.query_one(ControllerPanel).text(),
            "under_min_isr": list(app.source.series().get("under_min_isr", ())),
            "chart": screen.query_one("#chart-under-min-isr").query_one(".chart-label").plain}


async def _walk(app: DashboardApp, pilot) -> list[dict]:
    """What is shown at the last frame, at the first, and one step later."""
    seen = [_shown(app)]
    await pilot.press("home")
    await pilot.pause()
    seen.append(_shown(app))
    await pilot.press("right")
    await pilot.pause()
    seen.append(_shown(app))
    return seen


def test_a_lazy_image_shows_the_same_rows_and_counts_as_an_eager_one(tmp_path, monkeypatch) -> None:
    """Counted in the background (the threshold set to none), the panels end where the eager
    image's panels are, frame by frame; and they agree with the image itself."""
    directory = _log_dir(tmp_path)
    monkeypatch.setattr(counting, "BACKGROUND_PARTITIONS", 0)
    seen = {}
    for lazy in (True, False):
        history = _history(directory, monkeypatch, lazy=lazy)
        app = DashboardApp(history)

        async def main() -> list[dict]:
            async with app.run_test(size=(160, 50)) as pilot:
                await pilot.pause()
                await app.main.counted_event.wait()
                await pilot.pause()
                return await _walk(app, pilot)

        seen[lazy] = asyncio.run(main())
    assert seen[True] == seen[False]
    last = seen[False][0]
    assert "counting" not in repr(last)
    image = History.open_log_dir(directory).last().image
    assert last["rows"] == panels.partition_rows(image) and len(last["rows"]) == image.partition_count
    assert last["metrics"] == controller_metrics(image)
    assert last["brokers"] == panels.broker_rows(image)
    assert any(r.flags for r in last["rows"]) and last["metrics"].offline_partitions_count > 0


@pytest.mark.parametrize("size", [(160, 50), (80, 24)], ids=["wide", "80x24"])
def test_the_counts_say_counting_until_the_whole_count_is_in(tmp_path, monkeypatch, size) -> None:
    """While the background count is held, no panel shows a number where a count over the
    partitions goes, stepping included; once it is delivered, the numbers are the eager ones."""
    directory = _log_dir(tmp_path)
    monkeypatch.setattr(counting, "BACKGROUND_PARTITIONS", 0)
    gate = threading.Event()
    real = counting.start_counting

    def held(image, source, deliver, **options) -> None:
        def later(counts, error) -> None:
            gate.wait()
            deliver(counts, error)
        real(image, source, later, **options)

    monkeypatch.setattr(counting, "start_counting", held)
    app = DashboardApp(_history(directory, monkeypatch, lazy=True))

    async def main() -> tuple[list[dict], list[dict]]:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            waiting = await _walk(app, pilot)
            assert not app.main.counted
            gate.set()
            await app.main.counted_event.wait()
            await pilot.pause()
            await pilot.press("end")
            await pilot.pause()
            return waiting, await _walk(app, pilot)

    try:
        waiting, counted = asyncio.run(main())
    finally:
        gate.set()
    for shown, final in zip(waiting, counted):
        # the table fits its columns to a small table's rows, which reads (decodes) them all: its
        # total is then exact, and may be said; a number other than the final one never is
        assert shown["subtitle"] in ("partitions: counting…", final["subtitle"])
        assert shown["metrics"] is None and shown["under_min_isr"] == []
        assert all(b.leader_of is None and b.replicas is None for b in shown["brokers"])
        assert "leads: counting…" in shown["brokers_subtitle"]
        partitions_line, kip966_line = shown["controller"].splitlines()[2:4]
        assert re.fullmatch(r"partitions +counting… in \d+ topics", partitions_line)  # the topics are known
        assert re.fullmatch(r"KIP-966 +counting…", kip966_line)
        assert shown["chart"].endswith("counting…") and not re.search(r"\d", shown["chart"])
    # the rows on screen are right while counting (only they were built)
    monkeypatch.undo()
    eager = History.open_log_dir(directory)
    assert waiting[0]["rows"] == panels.partition_rows(eager.last().image)
    assert all("counting" not in repr(shown) for shown in counted)
    assert counted[0]["metrics"] == controller_metrics(eager.last().image)
    assert counted[1]["under_min_isr"] == list(_history(directory, monkeypatch, lazy=False).series()["under_min_isr"])


def test_the_partition_view_builds_only_the_rows_read(tmp_path) -> None:
    """The table's rows over a lazy image: reading the first rows decodes their topic only, the
    total is not reported as exact until every topic is counted, and a full read equals the list."""
    [snapshot] = (_log_dir(tmp_path) / "__cluster_metadata-0").glob("*.checkpoint")
    image, _ = metadata_loader.load_snapshot(snapshot)
    before = undecoded_topics(image.topics)
    view = PartitionView(image)
    assert not view.exact and len(view) == sum(n + 3 for n in range(TOPICS))
    first = view[0]
    assert undecoded_topics(image.topics) == before - 1
    assert first == panels.partition_rows(image)[0]
    assert list(view) == panels.partition_rows(image) and view.exact
    assert view[-1] == panels.partition_rows(image)[-1] and view[2:4] == panels.partition_rows(image)[2:4]


def test_a_step_reuses_the_layout_and_counts_the_topic_it_changed(tmp_path) -> None:
    """The view of the frame after a step follows the view before: the same rows as built afresh,
    the changed topic's rows the new ones, the untouched topics still not decoded."""
    [snapshot] = (_log_dir(tmp_path) / "__cluster_metadata-0").glob("*.checkpoint")
    image, _ = metadata_loader.load_snapshot(snapshot)
    before = PartitionView(image)
    delta = MetadataDelta(image)
    delta.replay(m.PartitionChangeRecordV0(partition_id=i32(0), topic_id=_topic_id(4), leader=i32(-1)))
    stepped = delta.apply()
    after = PartitionView(stepped, previous=before)
    assert undecoded_topics(stepped.topics) == TOPICS - 1 and not after.exact
    assert len(after) == len(before)
    row = next(r for r in after if (r.topic, r.partition) == ("t4", 0))
    assert row.leader == -1 and "leaderless" in row.flags
    assert list(after) == panels.partition_rows(stepped) and after.exact


@pytest.mark.parametrize("settled", [True, False], ids=["settled-heap", "heap-as-it-is"])
def test_counts_taken_in_join_a_settled_heap_out_of_the_collectors_sight(tmp_path, monkeypatch, settled) -> None:
    """The command line freezes the heap after the load (engine.common.heap.settle_heap); the
    counts, which arrive later and live as long, are frozen with it (else every full collection
    rescans them, mid-step). A heap nobody settled (a test's, a library caller's) is left as it is."""
    directory = _log_dir(tmp_path)
    monkeypatch.setattr(counting, "BACKGROUND_PARTITIONS", 0)
    app = DashboardApp(_history(directory, monkeypatch, lazy=True))

    async def main() -> object:
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause()
            await app.main.counted_event.wait()
            await pilot.pause()
            return app.main.counts

    gc.unfreeze()
    if settled:
        gc.freeze()
    try:
        counts = asyncio.run(main())
        assert gc.is_tracked(counts)
        assert any(o is counts for o in gc.get_objects()) is not settled  # frozen: out of every generation
        assert (gc.get_freeze_count() > 0) is settled
    finally:
        gc.unfreeze()
