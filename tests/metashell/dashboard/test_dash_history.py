"""The dashboard over the whole of a log's history (issue 27): ``h`` in the node browser lists the
selected node's changes (as ``log``), ``m`` at two points shows their diff, and the timeline spans
every run of a log with gaps, the gaps drawn and named; ``g`` / ``T`` into another run open it, a
point inside a gap is refused in one line with the position unchanged.

Logs used: a scripted one written with our writer (a topic ``orders`` of two partitions,
retention.ms set four times, one setting in an aborted transaction, orders-0's leader and ISR
changed), the same cut into three segments with the middle one deleted and a snapshot after it
(an archive's hole), and the demo log with a damaged batch (the runs -1..9 and 14..23, as in
test_dashboard_damage.py).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest

from engine.image.image_writer import image_records
from engine.image.metadata_loader import load_log_dir
from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i16, i32
from engine.storage.metadata_log import MetadataLog
from engine.storage.snapshot_writer import SnapshotId
from metashell.dashboard.app import DashboardApp
from metashell.dashboard.history import History
from metashell.dashboard.screens import HelpScreen, MainScreen
from metashell.dashboard.screens.changes_screen import ChangesScreen
from metashell.dashboard.screens.prompt_screen import PromptScreen
from metashell.dashboard.widgets import HeaderBar, NodeBrowser
from metashell.dashboard.widgets.timeline import Timeline
from tests.metashell.dashboard.damaged_demo import write_damaged_demo
from tests.dashboard_screen import screen_lines, shows

START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z, one batch a second
TOPIC = uuid.UUID(int=0xA1)
RETENTION = "/configs/TOPIC/orders/retention.ms"


def _partition(pid: int, leader: int) -> m.PartitionRecordV2:
    return m.PartitionRecordV2(partition_id=i32(pid), topic_id=TOPIC, replicas=(i32(1), i32(2)), isr=(i32(1), i32(2)),
                               removing_replicas=(), adding_replicas=(), leader=i32(leader),
                               leader_recovery_state=i8(0), leader_epoch=i32(0), partition_epoch=i32(0),
                               directories=(None, None), eligible_leader_replicas=None, last_known_elr=None)


def _retention(value: str) -> m.ConfigRecordV0:
    return m.ConfigRecordV0(resource_type=i8(2), resource_name="orders", name="retention.ms", value=value)


BATCHES = [
    [m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(27))],  # 0
    [m.TopicRecordV0(name="orders", topic_id=TOPIC), _partition(0, 1), _partition(1, 2), _retention("1000")],  # 1-4
    [_retention("2000")],  # 5
    [m.PartitionChangeRecordV2(partition_id=i32(0), topic_id=TOPIC, leader=i32(2), isr=(i32(2),))],  # 6
    [m.BeginTransactionRecordV0(name="t"), _retention("9999"), m.AbortTransactionRecordV0()],  # 7-9: aborted
    [_retention("3000")],  # 10
    [m.PartitionChangeRecordV2(partition_id=i32(0), topic_id=TOPIC, isr=(i32(2), i32(1)))],  # 11
    [_retention("4000")],  # 12
]


def write_scripted(directory: Path, *, roll_after: tuple[int, ...] = ()) -> Path:
    """BATCHES as a log directory, a new segment after each batch index in ``roll_after``."""
    with MetadataLog.create(directory, fsync_policy="never") as log:
        for n, records in enumerate(BATCHES):
            log.append(records, epoch=1, timestamp_ms=START_MS + 1000 * n)
            if n in roll_after:
                log.roll()
    return directory


@pytest.fixture
def scripted(tmp_path: Path) -> Path:
    return write_scripted(tmp_path / "scripted")


@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    """The demo log, a snapshot at end offset 15, a byte of the batch 10..13 flipped."""
    return write_damaged_demo(tmp_path / "demo")


def run(app: DashboardApp, body, size: tuple[int, int] = (80, 24)) -> None:
    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            await body(pilot, app.main)
    asyncio.run(main())


async def settle(pilot) -> None:
    """Let the app take in what was pressed, the workers it started included (another run is
    opened in one)."""
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def opened(pilot, refused: bool = False) -> ChangesScreen:
    """The history or diff box, once its worker has answered (with its refusal: ``refused``)."""
    await settle(pilot)
    box = pilot.app.screen
    assert isinstance(box, ChangesScreen)
    await pilot.app.workers.wait_for_complete()
    await settle(pilot)
    assert box.loaded and (box.failure is not None) == refused, box.failure
    return box


def texts(rows) -> list[list[str]]:
    return [[text for text, _ in row] for row in rows]


async def node_history(pilot, screen: MainScreen, path: str) -> ChangesScreen:
    await pilot.press("7")  # the node browser in front (the tabbed layout at 80x24)
    assert screen.query_one(NodeBrowser).select_path(path)
    await settle(pilot)
    await pilot.press("h")
    return await opened(pilot)


# -- a node's history -------------------------------------------------------------------------------

def test_h_lists_a_config_leafs_history_newest_first_with_the_aborted_change_apart(scripted: Path) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        box = await node_history(pilot, screen, RETENTION)
        rows = texts(box.query_one("#changes-table").rows)
        assert [(r[0], r[2], r[3]) for r in rows] == [
            ("12", "retention.ms", "3000 -> 4000"), ("10", "retention.ms", "2000 -> 3000"),
            ("5", "retention.ms", "1000 -> 2000"), ("4", "retention.ms", "created 1000")]
        assert rows[0][1] == "2026-01-01 00:00:07.000" and rows[0][4] == "CONFIG_RECORD"
        # the aborted setting is not among the changes: below, under its own heading, at its marker's offset
        assert texts(box.query_one("#changes-aborted").rows) == [
            ["9 (record 8)", "2026-01-01 00:00:04.000", "retention.ms", "2000 -> 9999", "CONFIG_RECORD"]]
        assert str(box.query_one("#changes-aborted-heading").render()).startswith("1 in aborted transactions")
        assert shows(pilot.app, r"^│ 4 changes under /configs/TOPIC/orders/retention\.ms, newest first")
        assert shows(pilot.app, r"│ +10 2026-01-01 00:00:05\.000 retention\.ms +2000 -> 3000 ")
        await pilot.press("escape")
        await settle(pilot)
        assert pilot.app.screen is screen
    run(DashboardApp(History.open_log_dir(scripted)), body)


def test_h_lists_a_partitions_history_by_the_fields_that_changed(scripted: Path) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        box = await node_history(pilot, screen, "/topics/orders/0")
        rows = texts(box.query_one("#changes-table").rows)
        assert [r[0] for r in rows] == ["11", "6", "2"]  # orders-1 and the config are not under this path
        assert rows[0][3] == "isr [2] -> [2,1], partitionEpoch 1 -> 2"
        assert rows[1][3] == "isr [1,2] -> [2], leader 1 -> 2, leaderEpoch 0 -> 1, partitionEpoch 0 -> 1"
        assert rows[2][3].startswith('created {"partitionId":0,') and rows[2][4] == "PARTITION_RECORD"
        assert not box.query_one("#changes-aborted").display  # nothing aborted here: no heading either
    run(DashboardApp(History.open_log_dir(scripted), offset=3), body)  # from any point: the whole history


def test_h_on_a_directory_lists_every_change_below_it(scripted: Path) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        box = await node_history(pilot, screen, "/topics/orders")  # as log: the topic, its partitions, its configs
        rows = texts(box.query_one("#changes-table").rows)
        assert [r[0] for r in rows] == ["12", "11", "10", "6", "5", "4", "3", "2", "1"]
        assert [r[2] for r in rows] == [RETENTION, "0", RETENTION, "0", RETENTION, RETENTION, "1", "0", "orders"]
        assert rows[-1][3] == 'created {"id":"AAAAAAAAAAAAAAAAAAAAoQ","name":"orders"}'
    run(DashboardApp(History.open_log_dir(scripted)), body)


def test_a_nodes_history_reaches_every_run_and_names_the_gap(damaged: Path) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        assert screen.source.start_offset == 14  # the newest run is shown
        box = await node_history(pilot, screen, "/brokers/2")
        offsets = [int(r[0]) for r in texts(box.query_one("#changes-table").rows)]
        assert offsets == sorted(offsets, reverse=True)
        assert 20 in offsets and 5 in offsets  # unfenced again in the run shown; registered in the other
        # (the gap as log names it: metashell.history's words and bounds)
        assert "gap 10..14 (records 10..14 missing; the state at 14 is from snapshot 15): " in box.view.summary
        assert "batch CRC mismatch" in box.view.summary
        assert "offsets -1..9 and 14..23" in box.view.summary
    run(DashboardApp(History.open_log_dir(damaged)), body)


# -- the diff of two marks ------------------------------------------------------------------------

def test_two_marks_show_their_diff(scripted: Path) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        timeline = screen.query_one(Timeline)
        assert not timeline.display  # one run, no mark: every row for the panels
        await pilot.press("m")
        await settle(pilot)
        assert timeline.display and "marks A 4" in timeline.words_text() and "A" in timeline.bar_text()
        await pilot.press("end", "m")
        box = await opened(pilot)
        assert box.title_text == "diff 4 12"
        assert texts(box.query_one("#changes-table").rows) == [
            ["configs", f"~ {RETENTION}  1000 -> 4000"],
            ["partitions", "~ /topics/orders/0  isr [1,2] -> [2,1], leader 1 -> 2, leaderEpoch 0 -> 1, partitionEpoch 0 -> 2"]]
        assert box.view.summary == ("diff 4 12: 2 paths differ · 1 change of aborted transactions left out (no effect)\n"
                                    "configs 1 changed · partitions 1 changed")
        await pilot.press("escape")
        await settle(pilot)
        assert screen.marks == (4, 12) and "B" in timeline.bar_text()
        await pilot.press("M")  # cleared: the timeline goes (one run)
        await settle(pilot)
        assert screen.marks == () and not timeline.display
    run(DashboardApp(History.open_log_dir(scripted), offset=4), body)


def test_marks_in_either_order(scripted: Path) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        await pilot.press("m", "left", "left", "left", "m")  # B (12) first, then A (9): the diff is 9 -> 12
        box = await opened(pilot)
        assert box.title_text == "diff 9 12"
        assert [r[1] for r in texts(box.query_one("#changes-table").rows)] == [
            f"~ {RETENTION}  2000 -> 4000", "~ /topics/orders/0  isr [2] -> [2,1], partitionEpoch 1 -> 2"]
    run(DashboardApp(History.open_log_dir(scripted)), body)


def test_marks_across_a_gap_are_refused_as_diff_refuses_them(damaged: Path) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        await pilot.press("m", "g", "5", "enter")
        await settle(pilot)
        await pilot.press("m")
        box = await opened(pilot, refused=True)
        assert box.title_text == "diff 5 23"
        assert box.failure.startswith("diff 5 23 crosses gap 10..14 (records 10..14 missing; ")
        assert box.failure.endswith("; mark two points on one side of it") and "\n" not in box.failure
        assert shows(pilot.app, r"^│ diff 5 23 crosses gap 10..14")
        await pilot.press("escape", "M", "g", "2", "0", "enter")  # both after the gap: a diff
        await settle(pilot)
        await pilot.press("m", "end", "m")
        box = await opened(pilot)
        assert box.title_text == "diff 20 23"
        assert [r[0] for r in texts(box.query_one("#changes-table").rows)] == ["partitions"] * 3  # 21-23: ISRs expand
    run(DashboardApp(History.open_log_dir(damaged)), body)


# -- the timeline over every run ------------------------------------------------------------------------

def test_the_timeline_spans_every_run_with_the_gap_drawn_and_named(damaged: Path) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        timeline = screen.query_one(Timeline)
        assert timeline.display
        bar = timeline.bar_text()
        assert bar.startswith("-1 ─") and bar.endswith("● 23")  # the other run, then the one shown, at its end
        assert "░" in bar and bar.index("─") < bar.index("░") < bar.index("━")
        words = timeline.words_text()
        assert words.startswith("offsets -1..23 · run 14..23 shown (of 2 runs) · gap 10..14 (records 10..14 missing; ")
        assert "batch CRC mismatch" in str(timeline.tooltip)
        assert shows(pilot.app, r"^ -1 ─+░+━+● 23 $")  # on screen at 80x24, under the header
    run(DashboardApp(History.open_log_dir(damaged)), body)


def test_g_and_T_into_another_run_open_it_and_the_slider_follows(damaged: Path) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        timeline = screen.query_one(Timeline)
        await pilot.press("g", "5", "enter")
        await settle(pilot)
        assert pilot.app.screen is screen and screen.frame.offset == 5
        assert (screen.source.start_offset, screen.source.last_offset) == (-1, 9)  # that run's History
        assert "run -1..9 shown" in timeline.words_text()
        bar = timeline.bar_text()
        assert bar.index("●") < bar.index("░") < bar.index("─", bar.index("░"))
        # the panels read the run shown: at 5 broker 2 is registered, fenced until its unfence at 8
        assert screen.frame.image.cluster.brokers[2].fenced
        await pilot.press("T", *"2026-01-01T00:00:09Z", "enter")  # back across the gap, by time
        await settle(pilot)
        assert screen.source.start_offset == 14 and screen.frame.offset == 21
        assert "run 14..23 shown" in timeline.words_text()
        await pilot.press("g", "7", "enter")  # the run opened before is kept: the same History again
        await settle(pilot)
        first = screen.source
        await pilot.press("g", "2", "0", "enter", "g", "3", "enter")
        await settle(pilot)
        assert screen.source is first and screen.frame.offset == 3
    run(DashboardApp(History.open_log_dir(damaged)), body)


def test_the_run_keys_and_a_click_on_the_slider_cross_the_gap_but_never_land_in_it(damaged: Path) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        timeline = screen.query_one(Timeline)
        await pilot.press("greater_than_sign")  # no run after the newest: nothing moves
        await settle(pilot)
        assert screen.frame.offset == 23
        await pilot.press("less_than_sign")  # the end of the run before the gap
        await settle(pilot)
        assert screen.frame.offset == 9 and screen.source.last_offset == 9
        await pilot.press("greater_than_sign")  # the start of the run after it: its snapshot's image
        await settle(pilot)
        assert screen.frame.offset == 14 and screen.source.start_offset == 14
        bar = timeline.bar_text()
        await pilot.click(Timeline, offset=(1 + bar.index("░") + 1, 0))  # (the padding, then the bar's cell)
        await settle(pilot)
        assert screen.frame.offset == 14  # refused: the gap has no point to show
        assert any(n.message.startswith("offset 1") and "damaged part of the log" in n.message
                   for n in pilot.app._notifications)
        await pilot.click(Timeline, offset=(1 + bar.index("─"), 0))  # the first cell: offset -1
        await settle(pilot)
        assert screen.frame.offset == -1 and screen.source.last_offset == 9
    run(DashboardApp(History.open_log_dir(damaged)), body)


def test_a_point_inside_a_gap_is_refused_in_one_line_and_nothing_moves(damaged: Path) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        before, source, bar = screen.frame.offset, screen.source, screen.query_one(Timeline).bar_text()
        await pilot.press("g", "1", "1", "enter")
        await settle(pilot)
        prompt = pilot.app.screen
        assert isinstance(prompt, PromptScreen) and prompt.title_text == "Go to offset (-1..9, 14..23)"
        error = str(prompt.query_one("#prompt-error").render())
        assert error.startswith("offset 11 is in a damaged part of the log, which no replay reaches (")
        assert "\n" not in error and "Traceback" not in error
        await pilot.press("escape")
        await settle(pilot)
        assert pilot.app.screen is screen and screen.frame.offset == before and screen.source is source
        assert screen.query_one(Timeline).bar_text() == bar
    run(DashboardApp(History.open_log_dir(damaged)), body)


def test_an_archive_hole_is_a_gap_of_the_timeline(tmp_path: Path) -> None:
    """A hand-made archive: segments 0..6, 7..11 and 12, the middle one deleted, the snapshot at
    12 kept and the manifest naming the gap (as the recorder leaves a hole, docs/recorder.md); the
    reader treats the hole as a gap (engine/image/log_holes.py)."""
    directory = write_scripted(tmp_path / "archive", roll_after=(3, 6))
    with MetadataLog.create(directory, fsync_policy="never") as log:
        log.write_snapshot(SnapshotId(12, 1), image_records(load_log_dir(directory, offset=11)[0]),
                           last_contained_log_timestamp_ms=START_MS + 6000, now_ms=9)
    segments = sorted((directory / "__cluster_metadata-0").glob("*.log"))
    assert [s.name[:20] for s in segments] == [f"{n:020d}" for n in (0, 7, 12)]
    segments[1].unlink()
    (directory / "archive.json").write_text(json.dumps({
        "format": 1, "cluster_id": "c2hlbGwtZGVtby1jbHVzdGVy", "first_offset": 0, "last_offset": 12,
        "ranges": [[0, 6], [12, 12]], "gaps": [{"first": 7, "resume": 12, "reason": "the recorder fell behind",
                                                "recorded_ms": START_MS + 9000}], "snapshots": [[12, 1]]}))
    history = History.open_log_dir(directory)

    async def body(pilot, screen: MainScreen) -> None:
        timeline = screen.query_one(Timeline)
        assert timeline.display and "░" in timeline.bar_text()
        assert "gap 7..11 (records 7..11 missing; the state at 11 is from snapshot 12): archive gap: " \
               in str(timeline.tooltip) and "the recorder fell behind" in str(timeline.tooltip)
        assert "⚠ archive with gaps: 11..12 shown (-1..6 by g)" in screen.query_one(HeaderBar).info.position
        await pilot.press("g", "9", "enter")
        await settle(pilot)
        assert isinstance(pilot.app.screen, PromptScreen)  # inside the hole: refused, nothing moves
        assert screen.frame.offset == 12
        await pilot.press("escape", "g", "5", "enter")
        await settle(pilot)
        assert screen.frame.offset == 5 and screen.source.last_offset == 6
        box = await node_history(pilot, screen, RETENTION)  # through the archive's index (built here)
        rows = texts(box.query_one("#changes-table").rows)
        # 10 is in the hole; 12 follows the snapshot at 12, which holds 10's value as its old one
        assert [(r[0], r[3]) for r in rows] == [("12", "3000 -> 4000"), ("5", "1000 -> 2000"), ("4", "created 1000")]
        assert "gap 7..11 (records 7..11 missing; " in box.view.summary and (directory / "history-index").is_dir()
    run(DashboardApp(history), body)


# -- 80x24 and the help -----------------------------------------------------------------------------------

def test_at_80x24_the_timeline_leaves_the_panels_their_rows_and_the_box_fits(damaged: Path) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        lines = screen_lines(pilot.app)
        assert len(lines) == 24 and all(len(line) <= 80 for line in lines)
        assert lines[2].startswith(" -1 ") and lines[3].startswith(" offsets -1..23")
        assert lines[4].startswith(" 1 Partitions")
        assert sum("orders" in line for line in lines) == 3  # every partition row still shows
        box = await node_history(pilot, screen, "/brokers/2")
        lines = screen_lines(pilot.app)
        assert lines[0].startswith("╭─ log /brokers/2 ") and lines[-1].endswith("escape closes ─╯")
        assert sum(line.startswith("│") and "fence" in line for line in lines) >= 2
        assert box.query_one("#changes-table").size.height >= 10
    run(DashboardApp(History.open_log_dir(damaged)), body)


def test_the_help_lists_the_history_keys(scripted: Path) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        await pilot.press("question_mark")
        await settle(pilot)
        help_screen = pilot.app.screen
        assert isinstance(help_screen, HelpScreen)
        rows = {(keys, where): what for keys, what, where in help_screen.rows}
        assert rows[("h", "node browser")] == "History (log)"
        assert rows[("m", "dashboard")] == "Mark (diff of two)"
        assert ("M", "dashboard") in rows and ("D", "dashboard") in rows
    run(DashboardApp(History.open_log_dir(scripted)), body)


def test_h_on_a_path_without_history_says_so_in_one_line(scripted: Path) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        await pilot.press("7")
        assert screen.query_one(NodeBrowser).select_path("/local")
        await settle(pilot)
        await pilot.press("h")
        box = await opened(pilot, refused=True)
        assert box.failure.startswith("/local: no history is kept there (changes are kept under /brokers, ")
        assert "Error" not in box.failure and "\n" not in box.failure
    run(DashboardApp(History.open_log_dir(scripted)), body)


def test_live_the_history_is_what_the_dashboard_holds_and_grows_with_it(demo_log_dir: Path) -> None:
    """A live source (the attachment's surface pushed by the test, as test_dashboard_live.py does):
    ``h`` lists the changes of the records held when it is pressed; pressed again after more
    records arrived, those too."""
    from engine.image.metadata_loader import replay_start, segment_batches
    from metashell.dashboard.ticker import ManualTicker
    from tests.metashell.dashboard.test_dashboard_live import PushedFeed, attached

    start = replay_start(demo_log_dir, earliest=True)
    batches = list(segment_batches(start.listing, start.begin, []))
    feed = PushedFeed()
    source = attached(feed, batches[:5])  # up to offset 9: broker 2 registered and unfenced
    poll = ManualTicker()

    async def body(pilot, screen: MainScreen) -> None:
        box = await node_history(pilot, screen, "/brokers/2")
        first = [r[0] for r in texts(box.query_one("#changes-table").rows)]
        assert first and max(int(o) for o in first) <= 9
        await pilot.press("escape")
        feed.push(batches[5:])
        poll.tick()
        await settle(pilot)
        assert screen.frame.offset == 23
        await pilot.press("h")
        box = await opened(pilot)
        again = [r[0] for r in texts(box.query_one("#changes-table").rows)]
        assert again[-len(first):] == first and {"18", "20"} <= set(again)  # fenced at 18, unfenced at 20
    run(DashboardApp(source, poll_ticker=poll), body, size=(160, 50))


def test_an_archive_the_recorders_writer_made_is_shown_whole(tmp_path: Path) -> None:
    """The recorder's own writer (metashell.record.archive) over a leader that deleted offsets 6..14
    before they were fetched: the archive holds 0..5, the leader's snapshot at 15 and 15..17."""
    from metashell.record.archive import Archive
    from tests.metashell.record.archive_fixtures import FakeLeaderLog, record_batches, record_gap

    leader = FakeLeaderLog()
    archive = Archive(tmp_path / "a").open()
    record_batches(archive, leader, 2)
    record_gap(archive, leader, deleted=3, reason="the leader's log starts past the archive's end", recorded_ms=1234)
    archive.close()

    async def body(pilot, screen: MainScreen) -> None:
        timeline = screen.query_one(Timeline)
        assert "run 14..17 shown (of 2 runs)" in timeline.words_text()
        assert "gap 6..14 (records 6..14 missing; the state at 14 is from snapshot 15): archive gap: the leader's " \
               "log starts past the archive's end" in str(timeline.tooltip)
        assert "⚠ archive with gaps: 14..17 shown (-1..5 by g)" in screen.query_one(HeaderBar).info.position
        await pilot.press("g", "1", "0", "enter")
        await settle(pilot)
        prompt = pilot.app.screen
        assert isinstance(prompt, PromptScreen) and "archive gap" in str(prompt.query_one("#prompt-error").render())
        await pilot.press("escape", "less_than_sign")
        await settle(pilot)
        assert screen.frame.offset == 5 and screen.source.last_offset == 5
        box = await node_history(pilot, screen, "/configs/TOPIC/t0/k1")
        assert [(r[0], r[3]) for r in texts(box.query_one("#changes-table").rows)] == [("1", "created 1")]
        assert (tmp_path / "a" / "history-index").is_dir()  # answered from the archive's index
    run(DashboardApp(History.open_log_dir(tmp_path / "a")), body)


def test_a_run_that_cannot_be_opened_any_more_is_one_line_and_nothing_moves(damaged: Path) -> None:
    """The log changed under the dashboard (its segment deleted): ``g`` into the other run fails in
    the worker that opens it, said in one line; the run shown stays."""
    async def body(pilot, screen: MainScreen) -> None:
        source = screen.source
        (damaged / "__cluster_metadata-0" / "00000000000000000000.log").unlink()
        await pilot.press("g", "5", "enter")
        await settle(pilot)
        assert pilot.app.screen is screen and screen.source is source and screen.frame.offset == 23
        lines = [n.message for n in pilot.app._notifications if n.severity == "error"]
        assert len(lines) == 1 and lines[0].startswith("offsets -1..9 cannot be opened: ")
        assert "\n" not in lines[0] and "Traceback" not in lines[0]
    run(DashboardApp(History.open_log_dir(damaged)), body)
