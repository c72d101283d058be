"""The runs of a log directory or an archive, each with the image it starts from and its batches,
and the gaps between them: what every history (``log``, ``diff``, the export's tables, the
dashboard's timeline) replays, so that none of them replays across a gap.

engine.image.log_runs finds where a log can be replayed (``scan_log``, ``runs_of``): a run is
(first, last), ``first`` being the offset whose state it starts with (-1: the empty image before
offset 0; else the last offset a snapshot holds, its end offset - 1). Here each run gets:
- its starting image: offset 0's empty image (or the earliest snapshot the segments continue
  from), or, after a gap, the snapshot's OWN image, its voters and kraft.version included:
  nothing of the segments before the gap is carried over (they are the other side of it);
- its batches: the offsets after ``first`` up to ``last``.

**A gap, in one meaning and one wording.** A gap ``RunGap(first, resume)`` between two runs says:
records ``first`` .. ``resume`` - 1 are missing from the history (absent from an archive,
damaged, or readable but after damage and before the next snapshot: no replay reaches them, so
no change is known for them), and the next run starts at ``resume`` - 1 with the state the
snapshot whose end offset is ``resume`` holds. ``resume`` None: the history ends at the gap.
``gap_words`` is how every screen says it:
``gap 12..17 (records 12..17 missing; the state at 17 is from snapshot 18): <reason>``.
The reason is the archive manifest's (``archive gap: <reason>``, with the time it was recorded)
when it names the gap, else the damage (or hole) the scan found.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator, NamedTuple

from engine.common.errors import MetadataError
from engine.image.log_holes import manifest_gaps, overlaps
from engine.image.log_runs import LogScan, damage_of, runs_of, scan_log
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import (first_reachable, load_snapshot, quorum_before, replay_start,
                                          segment_batches, with_snapshot_voters)
from engine.storage.log_reader import LogDirListing, LogEntry, list_log_dir, resolve_metadata_dir


class RunGap(NamedTuple):
    """Records ``first`` .. ``resume`` - 1 are missing; the next run starts with the state at
    ``resume`` - 1 from the snapshot ending at ``resume`` (None: the history ends here)."""

    first: int
    resume: int | None
    reason: str
    recorded_ms: int | None = None  # when the recorder wrote the gap down (the manifest's); None: damage


def gap_span(gap) -> str:
    """``gap 12..17 (records 12..17 missing; the state at 17 is from snapshot 18)``: the bounds
    alone (``gap 12.. (records from 12 on missing; no snapshot after them)`` at the end)."""
    if gap.resume is None:
        return f"gap {gap.first}.. (records from {gap.first} on missing; no snapshot after them)"
    last = gap.resume - 1
    return f"gap {gap.first}..{last} (records {gap.first}..{last} missing; the state at {last} is from snapshot {gap.resume})"


def gap_words(gap) -> str:
    """The one line naming a gap, everywhere: its bounds (``gap_span``) and its reason."""
    return f"{gap_span(gap)}: {gap.reason}"


@dataclass(frozen=True, slots=True)
class Run:
    """One stretch a replay walks: the state at ``first`` (``image``), then the batches up to ``last``."""

    first: int  # -1: before the first record; else the starting snapshot's last offset
    last: int
    image: MetadataImage
    begin: int  # the first offset of its batches
    listing: LogDirListing
    after_gap: bool  # its image is a snapshot's own: nothing before it may be read into it

    @property
    def span(self) -> tuple[int, int]:
        return self.first, self.last

    def batches(self, begin: int | None = None) -> Iterator[list[LogEntry]]:
        return segment_batches(self.listing, self.begin if begin is None else begin, [], end=self.last + 1)

    def start_near(self, offset: int) -> tuple[MetadataImage, int]:
        """(image, first offset of the batches after it) to replay this run from the newest of its
        snapshots at or before ``offset`` (a question about the run's end need not replay it all).
        Its voters are the snapshot's, then the run's own control records: never those before a gap."""
        inside = [(sid, path) for sid, path in self.listing.snapshots
                  if self.begin < sid.end_offset <= min(offset, self.last) + 1]
        for sid, path in reversed(inside):
            try:
                image = load_snapshot(path)[0]
            except MetadataError:
                continue  # a damaged snapshot: an older one, or the run's start, still answers
            start = self.image if self.after_gap else None
            begin = self.begin if self.after_gap else 0
            quorum = quorum_before(self.listing, sid.end_offset, begin=begin, start=start)
            return replace(image, quorum=with_snapshot_voters(quorum, image.quorum)), sid.end_offset
        return self.image, self.begin

    def first_time_ms(self) -> int | None:
        """The time of the run's starting image: its snapshot's, or its first record's."""
        if self.image.provenance.last_offset >= 0:
            return self.image.provenance.last_timestamp_ms
        return next((batch[0].timestamp_ms for batch in self.batches()), None)


@dataclass(frozen=True, slots=True)
class LogRuns:
    directory: Path
    listing: LogDirListing
    runs: tuple[Run, ...]
    gaps: tuple[RunGap, ...]

    @property
    def spans(self) -> tuple[tuple[int, int], ...]:
        return tuple(run.span for run in self.runs)

    def first_time_ms(self) -> int | None:
        return self.runs[0].first_time_ms() if self.runs else None


def log_runs(path: Path | str, listing: LogDirListing | None = None, scan: LogScan | None = None) -> LogRuns:
    """The runs of ``path`` (a node's log directory, an archive, or its __cluster_metadata-0) in
    log order, with their starting images, and the gaps between them (and after the last, when
    damage cuts the log short). Reads the batches' headers and CRCs once, and each starting snapshot."""
    directory = resolve_metadata_dir(Path(path))
    listing = listing if listing is not None else list_log_dir(directory)
    scan = scan if scan is not None else scan_log(listing)
    spans, gaps = run_spans(listing, scan)
    runs: list[Run] = []
    for index, (first, last) in enumerate(spans):
        if index == 0:
            start = replay_start(directory, earliest=True)
            runs.append(Run(first, last, start.image, start.begin, listing, after_gap=False))
            continue
        image = _snapshot_image(listing, first + 1)
        if image is None:  # its snapshot does not read: the history ends at the gap before it
            gaps = gaps[:index - 1] + (gaps[index - 1]._replace(resume=None),)
            break
        runs.append(Run(first, last, image, first + 1, listing, after_gap=True))
    return LogRuns(directory, listing, tuple(runs), gaps)


def run_spans(listing: LogDirListing, scan: LogScan, *, strict: bool = True) -> tuple[tuple[tuple[int, int], ...],
                                                                                      tuple[RunGap, ...]]:
    """The runs (first, last) and the gaps, without reading an image: what a timeline draws.
    ``strict``: a manifest that does not read is a MetadataError (else its reasons are not used)."""
    first = first_reachable(listing)
    starts = [first] + [s.end_offset - 1 for s, _ in listing.snapshots if s.end_offset - 1 > first]
    spans = runs_of(starts, scan)
    try:
        recorded = manifest_gaps(listing.path)
    except MetadataError:
        if strict:
            raise
        recorded = []

    def gap(low: int, resume: int | None) -> RunGap:
        named = next((g for g in recorded if overlaps(g, low, resume)), None)
        if named is not None:
            return RunGap(low, resume, f"archive gap: {named.reason}", named.recorded_ms)
        return RunGap(low, resume, damage_of(scan, low) or "no replay reaches these records")

    gaps = [gap(a[1] + 1, b[0] + 1) for a, b in zip(spans, spans[1:])]
    if any(g.first > spans[-1][1] for g in scan.gaps):  # damage (or a hole) cuts the last run short
        gaps.append(gap(spans[-1][1] + 1, None))
    return spans, tuple(gaps)


def snapshot_in_run(listing: LogDirListing, end_offset: int, image: MetadataImage,
                    scan: LogScan | None = None) -> MetadataImage:
    """``image``, the snapshot ending at ``end_offset``, with the quorum a replay of the run that
    reaches it stands at there (as ``Run.start_near`` gives it): the control records of the run's
    segments before it (Kafka's snapshots do not carry its leader changes, nor kraft.version 0),
    never those before a gap; a run that starts at this snapshot after a gap starts with its own.
    Scans the log (``scan_log``) unless ``scan`` is given."""
    spans, _ = run_spans(listing, scan if scan is not None else scan_log(listing))
    for index, (first, last) in enumerate(spans):
        if first <= end_offset - 1 <= last:
            if index > 0 and first == end_offset - 1:
                return image
            begin, start = (0, None) if index == 0 else (first + 1, _snapshot_image(listing, first + 1))
            quorum = quorum_before(listing, end_offset, begin=begin, start=start)
            return replace(image, quorum=with_snapshot_voters(quorum, image.quorum))
    return image


def _snapshot_image(listing: LogDirListing, end_offset: int) -> MetadataImage | None:
    for snapshot_id, path in listing.snapshots:
        if snapshot_id.end_offset == end_offset:
            try:
                return load_snapshot(path)[0]
            except MetadataError:
                return None
    return None
