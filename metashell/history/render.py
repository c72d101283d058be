"""How ``log`` and ``diff`` print change items and differences, for people and as JSON lines.

Text, one line per change (a value as ``cat --json`` shows it: JSON, strings bare):

    1204  2026-05-16T03:42:00.123Z  CONFIG_RECORD  /configs/TOPIC/orders/retention.ms  86400000 -> 3600000
    1210  2026-05-16T03:42:05.000Z  PARTITION_CHANGE_RECORD  /topics/orders/0  leader 1 -> 2, isr [1,2,3] -> [1,2]
    1220 (record 1217)  ...         (a transaction's record: where it took effect, then where it stands)

JSON (``--json``): one object per line (JSON Lines: a stream any line of which parses; ``jq -s``
makes an array of it).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Iterable

from engine.image.log_runs import iso_time
from metashell.history.change_items import ChangeItem
from metashell.history.query import Difference


def value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), sort_keys=False)


def change_text(item: ChangeItem) -> str:
    """What changed: ``old -> new``, per field for an object, ``created V`` / ``deleted (was V)``."""
    if item.old is None and item.new is None:
        return "absent"
    if item.old is None:
        text = f"created {value_text(item.new)}"
    elif item.new is None:
        text = f"deleted (was {value_text(item.old)})"
    elif item.domain == "scram" and item.old == item.new:
        text = "the credential changed (salt and keys redacted)"
    elif item.fields and isinstance(item.old, dict) and isinstance(item.new, dict):
        text = ", ".join(f"{k} {value_text(item.old.get(k))} -> {value_text(item.new.get(k))}" for k in item.fields)
    else:
        text = f"{value_text(item.old)} -> {value_text(item.new)}"
    if item.domain in ("brokers", "controllers") and item.event not in ("created", "deleted", "changed"):
        return f"{item.event}: {text}"
    return text


def item_line(item: ChangeItem) -> str:
    where = str(item.offset) if item.record_offset in (-1, item.offset) else f"{item.offset} (record {item.record_offset})"
    return f"{where}  {iso_time(item.timestamp_ms)}  {item.record}  {item.path}  {change_text(item)}"


def item_json(item: ChangeItem) -> str:
    return json.dumps(item.to_json(), separators=(",", ":"))


def log_lines(items: list[ChangeItem], as_json: bool) -> list[str]:
    """Applied changes first (in the order given), then those of aborted transactions and of a
    transaction still open, each under a heading (in JSON, ``aborted`` tells them apart)."""
    if as_json:
        return [item_json(item) for item in items]
    applied = [i for i in items if i.aborted is False]
    aborted = [i for i in items if i.aborted is True]
    still_open = [i for i in items if i.aborted is None]
    lines = [item_line(i) for i in applied]
    for heading, part in (("in aborted transactions (no effect):", aborted),
                          ("in a transaction still open (not applied yet):", still_open)):
        if part:
            lines += ["", heading, *(item_line(i) for i in part)]
    return lines


def difference_text(d: Difference) -> str:
    if d.kind == "created":
        return f"+ {d.path}  {value_text(d.new)}"
    if d.kind == "deleted":
        return f"- {d.path}  (was {value_text(d.old)})"
    if isinstance(d.old, dict) and isinstance(d.new, dict):
        keys = [*d.new, *(k for k in d.old if k not in d.new)]
        body = ", ".join(f"{k} {value_text(d.old.get(k))} -> {value_text(d.new.get(k))}" for k in keys)
        if d.domain == "scram" and d.old == d.new:
            body = "the credential changed (salt and keys redacted)"
    else:
        body = f"{value_text(d.old)} -> {value_text(d.new)}"
    mark = "~ " if d.kind == "changed" else "! "  # replaced: another topic of the same name
    return f"{mark}{d.path}  {'replaced: ' if d.kind == 'replaced' else ''}{body}"


def diff_lines(differences: list[Difference], as_json: bool) -> list[str]:
    if as_json:
        return [json.dumps(d.to_json(), separators=(",", ":")) for d in differences]
    return [difference_text(d) for d in differences]


KINDS = ("created", "deleted", "changed", "replaced")


def stat_lines(differences: Iterable[Difference], as_json: bool) -> list[str]:
    """Counts per domain and kind, domains in the order of their first difference's path."""
    counts: dict[str, Counter] = {}
    for d in differences:
        counts.setdefault(d.domain, Counter())[d.kind] += 1
    if as_json:
        return [json.dumps({"domain": domain, **{k: c[k] for k in KINDS}}, separators=(",", ":"))
                for domain, c in counts.items()]
    lines = [f"{domain:<15}" + "  ".join(f"{c[k]} {k}" for k in KINDS if c[k]) for domain, c in counts.items()]
    total = sum(sum(c.values()) for c in counts.values())
    lines.append(f"{total} path{'' if total == 1 else 's'} differ{'s' if total == 1 else ''}")
    return lines
