"""An archive's history index: its change items in sqlite, so that ``log`` answers in seconds.

Kept in ``ARCHIVE/history-index/items.sqlite`` (the archive's manifest, ``archive.json``, says a
directory is an archive; a node's own log directory gets no index: nothing is written there). It
is a cache of what ``change_items`` gives for the archive's runs (metashell/history/sources.py):

- ``items``: one row per item, compact (metashell/history/query.py: an object's changed fields
  only): its offset, time, path (``paths``: the path with its domain, entity and key) and topic
  (``topics``: the topic id) as columns, the rest as a short JSON array (record types and events
  by number: ``names``); indexed by (path,
  offset) and by topic, so a path's items are read without reading the others;
- ``meta``: the format, the archive's segments and snapshots as indexed (names and sizes), the
  runs and gaps, the offset through which every item is final (``settled``: before a
  transaction still open at the end, whose items change when it ends).

Trust: the index is checked against the archive each time it is opened (one listing, no reads).
Segments only appended to (the last one grown, new ones after it; the oldest segments and
snapshots perhaps deleted by retention): the index is brought up to date from the newest
snapshot at or before ``settled``, and what is now before the archive's earliest point dropped. Anything else (a segment gone, shrunk or
rewritten, a snapshot gone, an unreadable or foreign index): it is rebuilt, into a new file that
replaces the old one whole, so an interrupted build leaves the old one (or none), never half of one.
"""

from __future__ import annotations

import json
import json.encoder
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from engine.image.run_replay import LogRuns, log_runs
from engine.storage.log_reader import LogDirListing, list_log_dir, resolve_metadata_dir
from metashell.history.change_items import ChangeItem, change_items
from metashell.history.query import PathQuery
from metashell.history.sources import HistoryGap

INDEX_DIR = "history-index"
INDEX_FILE = "items.sqlite"
FORMAT = 3
MANIFEST = "archive.json"
BATCH_ROWS = 20_000

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE paths(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, domain TEXT NOT NULL, entity TEXT NOT NULL,
                   key TEXT);
CREATE TABLE topics(id INTEGER PRIMARY KEY, topic_id TEXT NOT NULL UNIQUE);
CREATE TABLE names(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE items(id INTEGER PRIMARY KEY, offset INTEGER NOT NULL, ts INTEGER NOT NULL,
                   path_id INTEGER NOT NULL, topic INTEGER, data TEXT NOT NULL);
"""
# Made after a build's rows (one sort each, not a B-tree insert per row), before an update's.
_INDEXES = """
CREATE INDEX items_by_path ON items(path_id, offset);
CREATE INDEX items_by_topic ON items(topic, offset) WHERE topic IS NOT NULL;
"""
# A cache, written by one process, rebuilt when lost: no journal while it is built (an interrupted
# build leaves a temporary file, never the index), a big page cache, sorts in memory.
# How long a connection waits for another process's write (the recorder's update, a second log)
# before sqlite says "database is locked": an update takes seconds at 10M records, never a minute.
BUSY_TIMEOUT_S = 60.0
_BUILD_PRAGMAS = "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-65536; PRAGMA temp_store=MEMORY;"


def archive_root(log_dir: Path | str) -> Path | None:
    """The archive a log directory belongs to (the directory holding ``archive.json``), or None."""
    path = Path(log_dir)
    for candidate in (path, path.parent):
        if (candidate / MANIFEST).is_file():
            return candidate
    return None


def _signature(listing: LogDirListing) -> dict:
    return {"segments": [[p.name, p.stat().st_size] for _, p in listing.segments],
            "snapshots": [p.name for _, p in listing.snapshots]}


def _appended(old: dict, new: dict) -> bool:
    """``new`` is ``old`` with records appended, and perhaps its oldest files deleted (a recorder's
    retention): the segments kept as they were but the last, grown, then new ones; the snapshots
    kept, and new ones only past the old newest (names sort as their offsets)."""
    old_segments, new_segments = old["segments"], new["segments"]
    names = [name for name, _ in old_segments]
    if not new_segments or new_segments[0][0] not in names:
        return False
    kept = old_segments[names.index(new_segments[0][0]):]
    head = len(kept) - 1
    if len(new_segments) <= head or new_segments[:head] != kept[:head]:
        return False
    name, size = kept[head]
    if new_segments[head][0] != name or new_segments[head][1] < size:
        return False
    newest = old["snapshots"][-1] if old["snapshots"] else ""
    return all(s in old["snapshots"] or s > newest for s in new["snapshots"])


@dataclass(frozen=True)
class IndexState:
    """What an archive's index holds, read without changing it (``record --status``, the recorder's start)."""

    state: str  # 'missing', 'current' (built over the archive as it is), 'behind' (records appended
    #             since: brought up to date when next opened), 'stale' (rebuilt when next opened)
    settled: int | None  # every item through this offset is in it (None: no usable index)
    why: str = ""

    def line(self) -> str:
        reach = f"items through offset {self.settled:,}" if self.settled is not None else ""
        return {"missing": "history index: none yet (built by the recorder or by the first log)",
                "current": f"history index: up to date ({reach})",
                "behind": f"history index: {reach}; the records after are added when it is next opened",
                "stale": f"history index: to be rebuilt ({self.why})"}[self.state]


def index_state(root: Path) -> IndexState:
    """The state of ``root``'s index against the archive's files as they are now (one listing, no reads)."""
    path = Path(root) / INDEX_DIR / INDEX_FILE
    if not path.exists():
        return IndexState("missing", None)
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
        try:
            if IndexHistory._get(db, "format") != str(FORMAT):
                return IndexState("stale", None, "another format")
            stored = json.loads(IndexHistory._get(db, "signature"))
            settled = json.loads(IndexHistory._get(db, "settled"))
        finally:
            db.close()
    except (sqlite3.DatabaseError, TypeError, ValueError) as exc:
        return IndexState("stale", None, f"unreadable: {exc}")
    signature = _signature(list_log_dir(resolve_metadata_dir(Path(root))))
    if stored == signature:
        return IndexState("current", settled)
    if _appended(stored, signature):
        return IndexState("behind", settled)
    return IndexState("stale", None, "the archive's segments are not those it was built from")


class IndexHistory:
    """The History of an archive (see metashell/history/sources.py), answered from its index."""

    def __init__(self, root: Path, note: Callable[[str], None] = lambda line: None):
        self.root = root
        self.note = note
        self.directory = resolve_metadata_dir(root)
        self.path = root / INDEX_DIR / INDEX_FILE
        self._paths: dict[int, tuple] = {}  # path id -> (path, domain, entity, key), as read
        self._topics: dict[int, str] = {}
        self._names: dict[int, str] = {}
        self.db = self._open()
        meta = self._meta()
        self.runs = tuple(tuple(run) for run in meta["runs"])
        self.gaps = tuple(HistoryGap(*gap) for gap in meta["gaps"])
        self.first_time_ms = meta["first_time_ms"]
        self.settled: int = json.loads(self._get(self.db, "settled"))  # every item through it is final

    def describe(self) -> str:
        return str(self.root)

    # -- opening: fresh, brought up to date, or rebuilt --------------------------------------------

    def _open(self) -> sqlite3.Connection:
        listing = list_log_dir(self.directory)
        signature = _signature(listing)
        db, why = self._existing()
        if db is not None:
            stored = json.loads(self._get(db, "signature"))
            if stored == signature:
                return db
            if _appended(stored, signature):
                self._update(db, listing, signature)
                return db
            db.close()
            why = "the archive's segments are not those it was built from"
        if why:
            self.note(f"history index: rebuilding {self.path.parent} ({why})")
        return self._build(listing, signature)

    def _existing(self) -> tuple[sqlite3.Connection | None, str | None]:
        if not self.path.exists():
            return None, None
        try:
            db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
            if self._get(db, "format") != str(FORMAT):
                db.close()
                return None, "another format"
            return db, None
        except sqlite3.DatabaseError as exc:
            return None, f"unreadable: {exc}"

    @staticmethod
    def _get(db: sqlite3.Connection, key: str) -> str | None:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def _meta(self) -> dict:
        return {key: json.loads(self._get(self.db, key)) for key in ("runs", "gaps", "first_time_ms")}

    def _build(self, listing: LogDirListing, signature: dict) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_name(f"{INDEX_FILE}.{os.getpid()}.tmp")
        for stray in self.path.parent.glob(f"{INDEX_FILE}.*.tmp"):  # a build killed midway (or this one's)
            if stray == temp or not _pid_alive(stray.name.split(".")[-2]):
                stray.unlink(missing_ok=True)
        db = sqlite3.connect(temp, timeout=BUSY_TIMEOUT_S)
        db.executescript(_BUILD_PRAGMAS + _SCHEMA)
        db.execute("INSERT INTO meta VALUES ('format', ?)", (str(FORMAT),))
        self._fill(db, listing, signature, settled=None)
        db.executescript(_INDEXES)
        db.commit()
        db.close()
        os.replace(temp, self.path)
        return sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)

    def _update(self, db: sqlite3.Connection, listing: LogDirListing, signature: dict) -> None:
        settled = json.loads(self._get(db, "settled"))
        old_runs = json.loads(self._get(db, "runs"))
        # Rows go in in log order (a build, then each update after its settled offset): the rows past
        # settled (a transaction still open) are the last ids, found walking back, not by a scan.
        keep = None
        for row_id, offset in db.execute("SELECT id, offset FROM items ORDER BY id DESC"):
            if offset <= settled:
                keep = row_id
                break
        db.execute("DELETE FROM items WHERE id > ?", (keep if keep is not None else -1,))
        found = log_runs(self.directory, listing)
        runs = found.spans
        self._fill(db, listing, signature, settled=settled, found=found)
        if runs and not (old_runs and runs[0][0] == old_runs[0][0]):
            # the oldest files deleted: what is before the earliest point now goes too, as in a rebuild
            db.execute("DELETE FROM items WHERE offset <= ?", (runs[0][0],))
        db.commit()

    def _fill(self, db: sqlite3.Connection, listing: LogDirListing, signature: dict, settled: int | None,
              found: LogRuns | None = None) -> tuple:
        """Add the items after ``settled`` (None: all), and the meta that goes with them; returns the runs."""
        found = found if found is not None else log_runs(self.directory, listing)
        runs, gaps = found.spans, found.gaps
        paths = dict(db.execute("SELECT path, id FROM paths"))
        topics = dict(db.execute("SELECT topic_id, id FROM topics"))
        names = _Names(db)
        rows: list[tuple] = []
        open_from: int | None = None
        last = -1
        for run in found.runs:
            if settled is not None and run.last <= settled:
                continue
            low = None if settled is None else settled + 1
            # brought up to date: from the run's newest snapshot before what is settled, not its start
            image, begin = (run.image, run.begin) if settled is None else run.start_near(max(run.first, settled))
            open_from = None  # a transaction a gap cut short never ends: only the last run's may change
            for item in change_items(image, run.batches(begin), start=low):
                if item.aborted is None and open_from is None:
                    open_from = item.record_offset
                path_id = paths.get(item.path)
                if path_id is None:
                    path_id = paths[item.path] = db.execute(
                        "INSERT INTO paths(path, domain, entity, key) VALUES (?, ?, ?, ?)",
                        (item.path, item.domain, item.entity, item.key)).lastrowid
                topic = None
                if item.topic_id is not None:
                    topic = topics.get(item.topic_id)
                    if topic is None:
                        topic = topics[item.topic_id] = db.execute("INSERT INTO topics(topic_id) VALUES (?)",
                                                                   (item.topic_id,)).lastrowid
                rows.append((item.offset, item.timestamp_ms, path_id, topic, _row_data(item, names)))
                if len(rows) >= BATCH_ROWS:
                    _insert(db, rows)
            last = max(last, run.last)
        _insert(db, rows)
        settled_now = open_from - 1 if open_from is not None else max(last, settled if settled is not None else -1)
        meta = {"signature": signature, "runs": runs, "gaps": [list(g) for g in gaps], "settled": settled_now,
                "first_time_ms": found.first_time_ms()}
        db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                       [(key, json.dumps(value)) for key, value in meta.items()])
        return runs

    # -- questions ----------------------------------------------------------------------------------

    def items(self, query: PathQuery, low: int | None = None, high: int | None = None, *,
              newest_first: bool = False) -> Iterator[ChangeItem]:
        where, args = ["offset >= ?", "offset <= ?"], [low if low is not None else -2, high if high is not None
                                                        else 2 ** 62]
        if query.topic_id is not None:
            where.append("topic = (SELECT id FROM topics WHERE topic_id = ?)")
            args.append(query.topic_id)
        elif query.field is not None:
            where.append("path_id IN (SELECT id FROM paths WHERE path = ?)")
            args.append(query.field[0])
        elif "/" not in query.prefixes:
            ors = []
            for prefix in query.prefixes:
                ors.append("path = ? OR (path >= ? AND path < ?)")
                args += [prefix, prefix + "/", prefix + "0"]  # '0' follows '/': the paths under prefix
            where.append(f"path_id IN (SELECT id FROM paths WHERE {' OR '.join(ors)})")
        order = "DESC" if newest_first else "ASC"
        sql = (f"SELECT offset, ts, path_id, topic, data FROM items WHERE {' AND '.join(where)} "
               f"ORDER BY offset {order}, id {order}")
        for offset, ts, path_id, topic, data in self.db.execute(sql, args):
            item = self._item(offset, ts, path_id, topic, data)
            if query.reaches(item):
                yield item

    def _item(self, offset: int, ts: int, path_id: int, topic: int | None, data: str) -> ChangeItem:
        path = self._paths.get(path_id)
        if path is None:
            path = self._paths[path_id] = self.db.execute("SELECT path, domain, entity, key FROM paths WHERE id = ?",
                                                          (path_id,)).fetchone()
        topic_id = None
        if topic is not None:
            topic_id = self._topics.get(topic)
            if topic_id is None:
                topic_id = self._topics[topic] = self.db.execute("SELECT topic_id FROM topics WHERE id = ?",
                                                                 (topic,)).fetchone()[0]
        record_offset, record, event, old, new, aborted, *whole = json.loads(data)
        record, event = self._name(record), self._name(event)
        fields = tuple(new) if isinstance(old, dict) and isinstance(new, dict) and not whole else ()
        return ChangeItem(offset, ts, path[1], path[2], path[3], path[0], old, new, record, aborted,
                          record_offset=offset - record_offset, topic_id=topic_id, fields=fields, event=event)

    def _name(self, name_id: int) -> str:
        name = self._names.get(name_id)
        if name is None:
            name = self._names[name_id] = self.db.execute("SELECT name FROM names WHERE id = ?", (name_id,)).fetchone()[0]
        return name

    def offset_at_time(self, time_ms: int) -> int:
        row = self.db.execute("SELECT max(offset) FROM items WHERE ts <= ?", (time_ms,)).fetchone()
        return row[0] if row and row[0] is not None else self.runs[0][0]

    def close(self) -> None:
        self.db.close()


def _pid_alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def _insert(db: sqlite3.Connection, rows: list[tuple]) -> None:
    db.executemany("INSERT INTO items(offset, ts, path_id, topic, data) VALUES (?, ?, ?, ?, ?)", rows)
    rows.clear()


class _Names:
    """Record types and events by number (``names``): a row says ``3``, not PARTITION_CHANGE_RECORD."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.ids = dict(db.execute("SELECT name, id FROM names"))

    def __call__(self, name: str) -> int:
        found = self.ids.get(name)
        if found is None:
            found = self.ids[name] = self.db.execute("INSERT INTO names(name) VALUES (?)", (name,)).lastrowid
        return found


def _row_data(item: ChangeItem, names: _Names) -> str:
    """An item's own part of its row, compact (metashell/history/query.py's ``compact``, inlined: no
    second item made per row): the path's and topic's parts are in their tables; an object's
    changed fields are the keys its old and new keep."""
    old, new, fields = item.old, item.new, item.fields
    both = isinstance(old, dict) and isinstance(new, dict)
    if fields and both:
        old, new = {k: old.get(k) for k in fields}, {k: new.get(k) for k in fields}
    row = [item.offset - item.record_offset, names(item.record), names(item.event), old, new, item.aborted]
    if not fields and both:
        row.append(1)  # two objects, no field differs as shown (a SCRAM credential's redacted salt changed)
    return _encode(row)


def _json_encoder() -> Callable[[object], str]:
    """``json.dumps(value, separators=(",", ":"))``, the same text, without making an encoder per
    call (a fifth of a row's cost): CPython's C encoder, made once; else json.dumps."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return lambda value: json.dumps(value, separators=(",", ":"))
    encode = make(None, json.JSONEncoder().default, json.encoder.encode_basestring_ascii, None, ":", ",",
                  False, False, True)
    return lambda value: "".join(encode(value, 0))


_encode = _json_encoder()
