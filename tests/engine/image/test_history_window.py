"""A MetadataHistory that grows (the live tools'): extend, the memory window, reset.

The batches are a real log directory's, read with the loader's own segment reader, and handed
over in chunks as a live attachment hands them; every image is checked against
``load_log_dir`` of the same directory at the same offset.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.image.metadata_history import MetadataHistory, OutsideWindowError, ReplayedBatch
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import LoadInfo, load_log_dir, replay_start, segment_batches
from engine.storage.log_reader import LogEntry
from tests.engine.image.test_one_replay_path import _write


def log_batches(directory: Path) -> list[list[LogEntry]]:
    start = replay_start(directory, earliest=True)
    return list(segment_batches(start.listing, start.begin, []))


def chunks(batches: list, sizes=(1, 3, 2, 5)) -> list[list]:
    """The batches in drains of varying sizes, as a feed hands them over."""
    out, at, n = [], 0, 0
    while at < len(batches):
        size = sizes[n % len(sizes)]
        out.append(batches[at:at + size])
        at, n = at + size, n + 1
    return out


class Recorder:
    def __init__(self) -> None:
        self.starts: list[int] = []
        self.batches: list[tuple[int, ...]] = []

    def replay_started(self, image: MetadataImage, start_offset: int) -> None:
        self.starts.append(start_offset)

    def batch_replayed(self, batch: ReplayedBatch) -> None:
        self.batches.append(tuple(e.offset for e in batch.entries))


@pytest.fixture
def story(tmp_path: Path) -> Path:
    return _write(tmp_path / "story")  # transactions (one aborted, one open at the end), ClearElr


def test_extend_in_drains_equals_the_loader_at_every_offset(story: Path) -> None:
    batches = log_batches(story)
    seen = Recorder()
    history = MetadataHistory.growing(load_log_dir(story)[1], MetadataImage(), -1,
                                      window_records=10_000, observer=seen)
    added = [history.extend(chunk) for chunk in chunks(batches)]
    assert sum(added) == sum(map(len, batches)) == len(history.entries)
    assert history.last_offset == batches[-1][-1].offset and history.first_offset == 0
    for offset in range(history.last_offset + 1):
        assert history.image_at(offset=offset)[0] == load_log_dir(story, offset=offset)[0], offset
    assert history.image_at()[0] == load_log_dir(story)[0]
    assert history.image_at(time_ms=3_500)[0] == load_log_dir(story, time_ms=3_500)[0]
    # the observer saw every batch once, in order, as in the single pass
    single = Recorder()
    MetadataHistory(load_log_dir(story)[1], MetadataImage(), iter(batches), -1, observer=single)
    assert seen.batches == single.batches and seen.starts == single.starts == [-1]


def test_a_batch_handed_over_twice_is_passed_over(story: Path) -> None:
    batches = log_batches(story)
    history = MetadataHistory.growing(load_log_dir(story)[1], MetadataImage(), -1, window_records=1000)
    assert history.extend(batches[:4]) == sum(map(len, batches[:4]))
    assert history.extend(batches[3:5]) == len(batches[4])  # batch 3 again: nothing of it replayed
    assert history.extend([]) == 0
    assert history.image_at()[0] == load_log_dir(story, offset=batches[4][-1].offset)[0]


def test_one_batch_a_drain_keeps_few_images(demo_log_dir: Path) -> None:
    """Each drain ends at a checkpoint; the previous end's goes once passed (no observer)."""
    batches = log_batches(demo_log_dir)
    history = MetadataHistory.growing(load_log_dir(demo_log_dir)[1], MetadataImage(), -1, window_records=100_000)
    for batch in batches:
        history.extend([batch])
    assert history.checkpoints == (-1, len(history.entries) - 1)
    for offset in range(0, history.last_offset + 1, 7):
        assert history.image_at(offset=offset)[0] == load_log_dir(demo_log_dir, offset=offset)[0], offset


def test_the_window_bounds_the_entries_and_moves_the_start(demo_log_dir: Path) -> None:
    batches = log_batches(demo_log_dir)
    total = sum(map(len, batches))
    window = total // 3
    seen = Recorder()
    history = MetadataHistory.growing(load_log_dir(demo_log_dir)[1], MetadataImage(), -1,
                                      window_records=window, observer=seen)
    firsts = []
    for chunk in chunks(batches, (2,)):
        history.extend(chunk)
        assert len(history.entries) <= window
        firsts.append(history.first_offset)
    assert firsts == sorted(firsts) and firsts[-1] > firsts[0]
    assert history.dropped_records + len(history.entries) == total
    start = history.start_offset
    assert start >= 0 and history.first_offset == start + 1
    assert history.start_image == load_log_dir(demo_log_dir, offset=start)[0]
    for offset in range(start, history.last_offset + 1):
        assert history.image_at(offset=offset)[0] == load_log_dir(demo_log_dir, offset=offset)[0], offset
    with pytest.raises(OutsideWindowError, match=f"offset {start - 1} is before .* from offset {start} on"):
        history.image_at(offset=start - 1)
    with pytest.raises(OutsideWindowError):
        history.image_at(time_ms=0)
    assert len(seen.batches) == len(batches)  # the observer still saw every batch


def test_reset_starts_anew_from_a_snapshot_image(story: Path) -> None:
    batches = log_batches(story)
    seen = Recorder()
    history = MetadataHistory.growing(load_log_dir(story)[1], MetadataImage(), -1, window_records=1000,
                                      observer=seen)
    history.extend(batches[:3])
    # the feed fell behind and fetched a snapshot at the end of batch 6 (offset 12)
    at = batches[6][-1].offset
    history.reset(load_log_dir(story, offset=at)[0], at)
    assert (history.entries, history.first_offset, history.last_offset) == ([], at, at)
    assert seen.starts == [-1, at]
    history.extend(batches[5:])  # overlapping the snapshot: what it holds is passed over
    assert history.first_offset == at + 1
    for offset in range(at, history.last_offset + 1):
        assert history.image_at(offset=offset)[0] == load_log_dir(story, offset=offset)[0], offset
    with pytest.raises(OutsideWindowError):
        history.image_at(offset=at - 1)


def test_the_window_must_hold_a_record() -> None:
    with pytest.raises(ValueError, match="window_records"):
        MetadataHistory.growing(LoadInfo(Path("live")), MetadataImage(), -1, window_records=0)
