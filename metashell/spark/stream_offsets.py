"""The kraft stream's offsets: where a micro-batch starts and ends, as Spark checkpoints them.

An offset is JSON (Spark writes it to the query's offset log and hands it back after a restart):

    {"clusters": {"<cluster id>": {"next": 1234, "epoch": 7}}}

per cluster the next metadata log offset to read and the leader epoch of the record before it
(0 before the first). The epoch is what a Raft Fetch needs as lastFetchedEpoch to go on from
``next`` as an observer, without replaying the log from its start; it also lets the leader tell
a log that diverged from the one read before (a failover that truncated an uncommitted tail:
never a committed offset, so never one handed to Spark). A micro-batch never ends inside a
metadata transaction (KIP-868), so every offset here stands outside one: a restart knows the
``aborted`` of every row it emits without looking back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping


class StreamOptionError(ValueError):
    """A bad option or offset of the kraft stream: one line naming it."""


class StreamError(Exception):
    """What stops a kraft stream on the driver (data lost past the checkpoint, a quorum that
    refuses us, another cluster's checkpoint): one line."""


@dataclass(frozen=True, slots=True, order=True)
class Position:
    """The next offset of one cluster's log and the epoch of the record before it."""

    next: int
    epoch: int

    def to_json(self) -> dict[str, int]:
        return {"next": self.next, "epoch": self.epoch}


START = Position(0, 0)  # the log's first offset (Kafka's lastFetchedEpoch of an empty log is 0)


def offset_json(positions: Mapping[str, Position]) -> dict[str, Any]:
    """The offset Spark checkpoints, clusters sorted so equal offsets compare equal as JSON
    (PySpark compares offsets by their json.dumps)."""
    return {"clusters": {cid: positions[cid].to_json() for cid in sorted(positions)}}


def positions_of(offset: Any, where: str = "the stream's offset") -> dict[str, Position]:
    """The positions of an offset Spark handed back (a checkpoint's): StreamOptionError, one line,
    for one this source never wrote (a checkpoint of another source, edited by hand)."""
    clusters = offset.get("clusters") if isinstance(offset, dict) else None
    if not isinstance(clusters, dict):
        raise StreamOptionError(f"{where} {_short(offset)} is not a kraft stream offset "
                                '(expected {"clusters": {"<cluster id>": {"next": N, "epoch": E}}})')
    out = {}
    for cid, pos in clusters.items():
        values = [pos.get(k) if isinstance(pos, dict) else None for k in ("next", "epoch")]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
            raise StreamOptionError(f"{where}: cluster {cid}'s position {_short(pos)} is not "
                                    '{"next": N, "epoch": E} with whole numbers >= 0')
        out[str(cid)] = Position(values[0], values[1])
    return out


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def data_loss_line(cluster_id: str, wanted: int, available: int, where: str) -> str:
    """The failOnDataLoss line (as Spark's Kafka source words it: what is gone, and the way on)."""
    return (f"cluster {cluster_id}: offsets {wanted} to {available - 1} are no longer available ({where} "
            f"starts at offset {available}): the checkpoint's next offset {wanted} is lost. Set "
            f"option failOnDataLoss=false to go on from offset {available} (the skipped offsets are "
            "logged), or start the query from a new checkpoint")


def bool_option(options: Mapping[str, str], name: str, default: bool) -> bool:
    value = options.get(name)
    if value is None:
        return default
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise StreamOptionError(f"option {name}={value!r}: expected true or false")
    return text == "true"


def int_option(options: Mapping[str, str], name: str, default: int, low: int) -> int:
    value = options.get(name)
    if value is None:
        return default
    try:
        number = int(str(value).strip())
    except ValueError:
        raise StreamOptionError(f"option {name}={value!r}: expected a whole number") from None
    if number < low:
        raise StreamOptionError(f"option {name}={value!r}: expected a whole number >= {low}")
    return number
