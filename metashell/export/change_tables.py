"""The change tables: one row per changed item, for an analyst's audit of a cluster's metadata.

``config_changes``, ``acl_changes``, ``client_quota_changes``, ``scram_changes``,
``feature_changes``, ``topic_changes``, ``broker_changes`` and ``voter_changes`` (schemas:
metashell.export.schemas) are the change items of metashell.history.change_items, the one
interpreter of what a record changed (``log`` and ``diff`` read the same items), sorted into
tables by domain, each row with the typed columns its domain calls for. Nothing here replays a
record or reads a change set: a row is its item, and the typed columns are read from the item's
tree path and JSON values, as the shell shows them.

Which items go where:
- ``feature_changes``: features, and the quorum's kraft.version (its own record, the same idea);
- ``topic_changes``: topics created and deleted (``partition`` null) and their partitions'
  changes (a deleted topic's partitions too); the topic's configs are in ``config_changes``;
- ``broker_changes``: broker registrations; controllers' are the ``controller_registrations``
  table's, leader elections the ``leader_changes`` table's;
- ``voter_changes``: voters added, removed or changed by a VotersRecord (KIP-853).
Delegation tokens and producer-id blocks have items but no table here.

Secrets: config values named secret are ``[redacted]`` (always: the items never hold them); a
SCRAM row keeps the iterations only, never the salt or keys.

``gaps``: where a log directory's or an archive's history is cut (engine.image.run_replay);
the rows on either side of a gap come from separate replays, and none speaks across it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable

from engine.image.metadata_image import MetadataImage
from engine.image.run_replay import RunGap, log_runs
from engine.records.record_json import dumps
from engine.storage.log_reader import LogEntry
from metashell.export.schemas import CHANGE_TABLES, column_names
from metashell.export.tables import Table
from metashell.history.change_items import ChangeItem, change_items
from metashell.tree.kafka_names import ACL_OPERATIONS, ACL_PATTERN_TYPES, ACL_PERMISSIONS, ACL_RESOURCE_TYPES
from metashell.tree.nodes import DEFAULT_NAME, decode_name, split_path

# an item's domain -> the table its rows go to (other domains have no change table)
TABLE_OF_DOMAIN = {"configs": "config_changes", "acls": "acl_changes", "client_quotas": "client_quota_changes",
                   "scram": "scram_changes", "features": "feature_changes", "kraft_version": "feature_changes",
                   "topics": "topic_changes", "partitions": "topic_changes", "brokers": "broker_changes",
                   "voters": "voter_changes"}


def change_rows(log_dir: Path | str, *, start: int | None = None, end: int | None = None,
                tables: Iterable[str] = CHANGE_TABLES) -> dict[str, Table]:
    """The change tables of a log directory or an archive, replayed run by run (never across a gap)."""
    found = log_runs(log_dir)
    return tables_of(((run.image, run.batches()) for run in found.runs), found.gaps, start=start, end=end,
                     tables=tables)


def change_rows_of(start_image: MetadataImage, batches: Iterable[list[LogEntry]], *, start: int | None = None,
                   end: int | None = None, tables: Iterable[str] = CHANGE_TABLES) -> dict[str, Table]:
    """The change tables of ``batches`` replayed from ``start_image`` (a live session's fetch)."""
    return tables_of([(start_image, batches)], [], start=start, end=end, tables=tables)


def tables_of(runs: Iterable[tuple[MetadataImage, Iterable[list[LogEntry]]]], gaps: Iterable[RunGap], *,
              start: int | None = None, end: int | None = None,
              tables: Iterable[str] = CHANGE_TABLES) -> dict[str, Table]:
    """The tables ``tables`` of the items of each run (in log order), and of ``gaps`` (those that
    meet ``start`` .. ``end``)."""
    wanted = set(tables)
    out: dict[str, list[tuple]] = {kind: [] for kind in CHANGE_TABLES if kind in wanted}
    if wanted & set(TABLE_OF_DOMAIN.values()):
        for image, batches in runs:
            for item in change_items(image, batches, start=start, end=end):
                kind = TABLE_OF_DOMAIN.get(item.domain)
                if kind in out:
                    out[kind].append(row_of(kind, item))
    if "gaps" in out:
        out["gaps"] = [(g.first, g.resume, g.reason, g.recorded_ms) for g in gaps
                       if (end is None or g.first <= end) and (start is None or g.resume is None or g.resume > start)]
    return {kind: Table(kind, column_names(kind), rows) for kind, rows in out.items()}


def row_of(kind: str, item: ChangeItem) -> tuple:
    """One item's row of table ``kind``, in the schema's column order."""
    typed, old, new = _TYPED[kind](item)
    return (item.offset, item.record_offset, item.timestamp_ms, item.entity, item.key, *typed, old, new, item.event,
            item.path, item.record, item.aborted)


# -- each table's typed columns: item -> (typed columns, old value, new value) ---------------------

def _config(item: ChangeItem) -> tuple:
    _, type_name, name, _ = split_path(item.path)  # /configs/<TYPE>/<name>/<key>
    resource_name = None if name == DEFAULT_NAME else decode_name(name)
    resource_type = type_name.lower()
    if resource_type == "broker" and resource_name is None:
        resource_type = "cluster"  # the broker default, as the configs table names it
    return (resource_type, resource_name), item.old, item.new


def _acl(item: ChangeItem) -> tuple:
    acl = item.new if item.new is not None else item.old
    typed = (split_path(item.path)[1], _named(ACL_RESOURCE_TYPES, acl.get("resourceType")), acl.get("resourceName"),
             _named(ACL_PATTERN_TYPES, acl.get("patternType")), acl.get("principal"), acl.get("host"),
             _named(ACL_OPERATIONS, acl.get("operation")), _named(ACL_PERMISSIONS, acl.get("permissionType")))
    return typed, _json(item.old), _json(item.new)


def _quota(item: ChangeItem) -> tuple:
    entity = []  # /client-quotas/<type>=<name>,...: each part encoded, so , and = only separate
    for part in split_path(item.path)[1].split(","):
        kind, _, name = part.partition("=")
        entity.append((decode_name(kind), None if name == DEFAULT_NAME else decode_name(name)))
    return (entity,), _float(item.old), _float(item.new)


def _scram(item: ChangeItem) -> tuple:
    user = decode_name(split_path(item.path)[2])  # /scram/<mechanism>/<user>
    return (user, item.key), _iterations(item.old), _iterations(item.new)


def _feature(item: ChangeItem) -> tuple:
    return (item.key if item.domain == "features" else "kraft.version",), item.old, item.new


def _topic(item: ChangeItem) -> tuple:
    name = decode_name(split_path(item.path)[1])  # /topics/<name>[/<partition>]
    if item.domain == "topics":
        return (name, item.topic_id, None, list(item.fields), None, None, None), _json(item.old), _json(item.new)
    state = item.new if item.new is not None else item.old
    return ((name, item.topic_id, int(item.key), list(item.fields), state.get("leader"), state.get("leaderEpoch"),
             state.get("isr")), _json(item.old), _json(item.new))


def _broker(item: ChangeItem) -> tuple:
    registration = item.new if item.new is not None else item.old
    after = item.new or {}
    return ((int(split_path(item.path)[1]), registration.get("epoch"), registration.get("incarnation-id"),
             after.get("fenced"), after.get("in-controlled-shutdown"), list(item.fields)),
            _json(item.old), _json(item.new))


def _voter(item: ChangeItem) -> tuple:
    voter = item.new if item.new is not None else item.old
    return (int(item.key), voter.get("directory-id"), list(item.fields)), _json(item.old), _json(item.new)


_TYPED: dict[str, Callable[[ChangeItem], tuple]] = {
    "config_changes": _config, "acl_changes": _acl, "client_quota_changes": _quota, "scram_changes": _scram,
    "feature_changes": _feature, "topic_changes": _topic, "broker_changes": _broker, "voter_changes": _voter}


def _json(value: Any) -> str | None:
    return None if value is None else dumps(value)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _iterations(credential: Any) -> int | None:
    """A credential's iterations: all a row says of it (its salt and keys stay out)."""
    return None if credential is None else credential.get("iterations")


def _named(names: dict[int, str], value: Any) -> Any:
    return names.get(value, None if value is None else str(value))
