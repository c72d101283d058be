"""Typed schemas of the exported tables: one column spec per table kind, Spark and Arrow types
made from it on demand.

The specs (``COLUMNS``) are plain Python, so this module imports without pyspark or pyarrow;
``spark_schema(kind)`` and ``arrow_schema(kind)`` import them when called. ``SCHEMA_DOCS``
documents every field (docs/export.md can be generated from it).

A type is ``"string"``, ``"int"`` (32-bit), ``"long"`` (64-bit), ``"boolean"``, ``"double"``,
``("array", type)`` or ``("struct", ((name, type), ...))``.
"""

from __future__ import annotations

from typing import Any

# The tables of the log's history (metashell.export.history_tables), beside the image's tables:
# those read from each record, and the change tables (metashell.export.change_tables), one row
# per changed item, with the gaps of an archive they cannot see across.
RECORD_TABLES = ("records", "partition_changes", "broker_fencing", "controller_registrations", "leader_changes")
CHANGE_TABLES = ("config_changes", "acl_changes", "client_quota_changes", "scram_changes", "feature_changes",
                 "topic_changes", "broker_changes", "voter_changes", "gaps")
HISTORY_TABLES = RECORD_TABLES + CHANGE_TABLES

INT_ARRAY = ("array", "int")
STR_ARRAY = ("array", "string")
ENDPOINT = ("struct", (("name", "string"), ("host", "string"), ("port", "int"), ("security_protocol", "int")))
ENTITY = ("struct", (("type", "string"), ("name", "string")))

# An ACL binding's columns, the same in the image's acls table and in acl_changes.
_ACL_BINDING = (
    ("resource_type", "string", "TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER, ..."),
    ("resource_name", "string", "resource name or pattern"),
    ("pattern_type", "string", "LITERAL, PREFIXED, ..."),
    ("principal", "string", "principal, e.g. User:alice"),
    ("host", "string", "host, * for any"),
    ("operation", "string", "READ, WRITE, ALL, ..."),
    ("permission_type", "string", "ALLOW or DENY"),
)

# kind -> ((column, type, description), ...), in column order
COLUMNS: dict[str, tuple[tuple[str, Any, str], ...]] = {
    "partitions": (
        ("topic", "string", "topic name"),
        ("topic_id", "string", "topic id, Kafka's URL-safe base64 form (22 chars)"),
        ("partition", "int", "partition id"),
        ("leader", "int", "leader broker id; -1 when the partition has no leader"),
        ("leader_epoch", "int", "leader epoch"),
        ("partition_epoch", "int", "partition epoch (bumped by every change)"),
        ("replicas", INT_ARRAY, "replica broker ids, in assignment order"),
        ("isr", INT_ARRAY, "in-sync replicas"),
        ("elr", INT_ARRAY, "eligible leader replicas (KIP-966)"),
        ("last_known_elr", INT_ARRAY, "last known ELR (KIP-966)"),
        ("adding", INT_ARRAY, "replicas being added by a reassignment"),
        ("removing", INT_ARRAY, "replicas being removed by a reassignment"),
        ("directories", STR_ARRAY, "log directory id per replica (Kafka base64); reserved: "
                                   "AAAAAAAAAAAAAAAAAAAAAA MIGRATING, AAAAAAAAAAAAAAAAAAAAAQ UNASSIGNED, "
                                   "AAAAAAAAAAAAAAAAAAAAAg LOST"),
        ("leader_recovery_state", "int", "0 recovered, 1 recovering (after an unclean election)"),
        ("under_min_isr", "boolean", "ISR smaller than min_isr (the dashboard's under-min-ISR flag)"),
        ("leaderless", "boolean", "no leader (leader < 0)"),
        ("min_isr", "int", "the topic's min.insync.replicas: its own, else the cluster default, else 1"),
    ),
    "brokers": (
        ("broker_id", "int", "broker id"),
        ("epoch", "long", "broker epoch of its registration"),
        ("incarnation_id", "string", "incarnation id (Kafka base64)"),
        ("rack", "string", "rack, null when none"),
        ("fenced", "boolean", "fenced"),
        ("in_controlled_shutdown", "boolean", "in controlled shutdown"),
        ("state", "string", "active, fenced or controlled-shutdown (as /brokers/<id>/state)"),
        ("endpoints", ("array", ENDPOINT), "listeners: name, host, port, security protocol id"),
        ("directories", STR_ARRAY, "log directory ids (Kafka base64)"),
        ("cordoned_directories", STR_ARRAY, "log directories cordoned (KIP-1066, Kafka 4.3+: no new replica goes "
                                            "there); null until the broker reported them"),
        ("partitions_led", "int", "partitions this broker leads"),
        ("replicas_hosted", "int", "partition replicas assigned to this broker"),
    ),
    "voters": (
        ("node_id", "int", "voter node id"),
        ("directory_id", "string", "voter directory id (Kafka base64); null when the log does not say"),
        ("endpoints", STR_ARRAY, "listeners as name://host:port"),
        ("min_kraft_version", "int", "lowest kraft.version supported (VotersRecord only)"),
        ("max_kraft_version", "int", "highest kraft.version supported (VotersRecord only)"),
        ("is_leader", "boolean", "the leader of the last leader change"),
        ("source", "string", "where the voter set came from: VotersRecord, LeaderChangeMessage or quorum-state"),
    ),
    "configs": (
        ("resource_type", "string", "topic, broker, cluster (the broker default), broker_logger, "
                                    "client_metrics or group"),
        ("resource_name", "string", "topic or broker name; null for cluster"),
        ("key", "string", "config name"),
        ("value", "string", "config value; '[redacted]' for secrets (passwords, keys, JAAS) unless show_secrets"),
    ),
    "features": (
        ("name", "string", "feature name (metadata.version included)"),
        ("level", "int", "finalized level"),
    ),
    "acls": (
        ("id", "string", "ACL id (Kafka base64)"),
        *_ACL_BINDING,
    ),
    "client_quotas": (
        ("entity", ("array", ENTITY), "the entity: (type, name) pairs; a null name is the default entity"),
        ("key", "string", "quota name, e.g. producer_byte_rate"),
        ("value", "double", "quota value"),
    ),
    "scram_users": (
        ("user", "string", "user name"),
        ("mechanism", "string", "SCRAM-SHA-256 or SCRAM-SHA-512"),
        ("iterations", "int", "iterations (salt and keys are never exported)"),
    ),
    "delegation_tokens": (
        ("token_id", "string", "token id"),
        ("owner", "string", "owner principal"),
        ("requester", "string", "requester principal"),
        ("renewers", STR_ARRAY, "renewer principals"),
        ("issue_timestamp_ms", "long", "issued at (epoch ms)"),
        ("expiration_timestamp_ms", "long", "expires at (epoch ms)"),
        ("max_timestamp_ms", "long", "max lifetime end (epoch ms); the HMAC is never exported"),
    ),
    "producer_ids": (
        ("next_producer_id", "long", "next producer id block start; -1 when none was allocated"),
    ),
    "generic": (
        ("path", "string", "absolute node path"),
        ("name", "string", "node name"),
        ("kind", "string", "dir or file"),
        ("value_json", "string", "a file's value as JSON (as cat prints it); null for directories"),
    ),
    # -- history tables (from a log directory) -------------------------------------------
    "records": (
        ("offset", "long", "log offset"),
        ("leader_epoch", "int", "the batch's partition leader epoch"),
        ("timestamp_ms", "long", "append time (epoch ms)"),
        ("control", "boolean", "a control record (leader change, snapshot header, voters, ...)"),
        ("type", "string", "record type, e.g. PARTITION_CHANGE_RECORD, LEADER_CHANGE"),
        ("version", "int", "record version; null for control records"),
        ("payload_json", "string", "the record's data in Kafka's JSON form, secrets redacted"),
        ("aborted", "boolean", "in a metadata transaction (KIP-868) that was aborted, its markers included: it "
                               "changed nothing; null: in one still open where the log ends (not applied)"),
    ),
    "partition_changes": (
        ("offset", "long", "log offset"),
        ("timestamp_ms", "long", "append time (epoch ms)"),
        ("type", "string", "PARTITION_RECORD (creation), PARTITION_CHANGE_RECORD, or CLEAR_ELR_RECORD (a row "
                           "per partition whose ELR or last-known ELR it cleared)"),
        ("topic", "string", "topic name; null when neither the log nor its snapshot names the id"),
        ("topic_id", "string", "topic id (Kafka base64)"),
        ("partition", "int", "partition id"),
        ("leader", "int", "the record's leader: -1 none, -2 unchanged"),
        ("isr", INT_ARRAY, "the record's ISR; null: unchanged"),
        ("replicas", INT_ARRAY, "the record's replicas; null: unchanged"),
        ("adding", INT_ARRAY, "the record's adding replicas; null: unchanged"),
        ("removing", INT_ARRAY, "the record's removing replicas; null: unchanged"),
        ("elr", INT_ARRAY, "the record's ELR; null: unchanged"),
        ("last_known_elr", INT_ARRAY, "the record's last known ELR; null: unchanged"),
        ("leader_recovery_state", "int", "the record's leader recovery state; -1 unchanged"),
        ("leader_after", "int", "leader after the record takes effect (the record's transaction committed); "
                                "null when the partition does not exist then (its creation aborted or pending)"),
        ("leader_epoch_after", "int", "leader epoch after the record"),
        ("partition_epoch_after", "int", "partition epoch after the record"),
        ("isr_after", INT_ARRAY, "ISR after the record"),
        ("replicas_after", INT_ARRAY, "replicas after the record"),
        ("elr_after", INT_ARRAY, "ELR after the record"),
        ("min_isr_after", "int", "min.insync.replicas in force for the topic after the record: the topic's "
                                 "config, else the cluster's (the brokers' default), else 1 (a broker's "
                                 "server.properties is not in the metadata)"),
        ("aborted", "boolean", "in a metadata transaction (KIP-868) that was aborted, its markers included: it "
                               "changed nothing; null: in one still open where the log ends (not applied)"),
    ),
    "broker_fencing": (
        ("offset", "long", "log offset"),
        ("timestamp_ms", "long", "append time (epoch ms)"),
        ("broker_id", "int", "broker id"),
        ("broker_epoch", "long", "the registration's broker epoch (before it, for an unregistration)"),
        ("event", "string", "how the record changed the registration: register (new or new epoch), unregister, "
                            "fence, unfence, controlled_shutdown, cordon (its cordoned log directories) or change; "
                            "a record that changes none has no row"),
        ("fenced", "boolean", "fenced after the record (null when unknown)"),
        ("in_controlled_shutdown", "boolean", "in controlled shutdown after the record (null when unknown)"),
        ("aborted", "boolean", "in a metadata transaction (KIP-868) that was aborted, its markers included: it "
                               "changed nothing; null: in one still open where the log ends (not applied)"),
    ),
    "controller_registrations": (
        ("offset", "long", "log offset"),
        ("timestamp_ms", "long", "append time (epoch ms)"),
        ("controller_id", "int", "controller id"),
        ("event", "string", "register (new, or a new incarnation) or unregister (KIP-1312, Kafka 4.4+)"),
        ("incarnation_id", "string", "the registration's incarnation id (Kafka base64; before it, for an "
                                     "unregistration)"),
        ("aborted", "boolean", "in a metadata transaction (KIP-868) that was aborted, its markers included: it "
                               "changed nothing; null: in one still open where the log ends (not applied)"),
    ),
    "leader_changes": (
        ("offset", "long", "log offset of the LeaderChangeMessage"),
        ("timestamp_ms", "long", "append time (epoch ms)"),
        ("epoch", "int", "leader epoch"),
        ("leader_id", "int", "the new leader"),
        ("voters", INT_ARRAY, "voters"),
        ("granting_voters", INT_ARRAY, "voters that granted the vote"),
    ),
}
_ABORTED = ("aborted", "boolean", "in a metadata transaction (KIP-868) that was aborted: it changed nothing; "
                                  "null: in one still open where the log ends (not applied)")
_EVENT = ("event", "string", "created, changed or deleted (old null: created; new null: deleted)")
_FIELDS = ("fields", ("array", "string"), "the keys of the JSON value whose values differ, e.g. leader, isr")


def _changes(entity: str, key: str, value_type: Any, value: str, *typed: tuple, event: tuple = _EVENT) -> tuple:
    """A change table's columns (metashell.export.change_tables): where and when, who and what,
    the typed columns of its domain, old and new value, how, the tree path, the record, aborted."""
    return (
        ("offset", "long", "where the change took effect: the record's offset; for a record of a metadata "
                           "transaction, the offset of the marker that ended it (committed or aborted), or its own "
                           "while the transaction is still open"),
        ("record_offset", "long", "the record's own offset (differs from offset inside a transaction)"),
        ("timestamp_ms", "long", "append time of the record at offset (epoch ms)"),
        ("entity", "string", entity),
        ("key", "string", key),
        *typed,
        ("old_value", value_type, f"before: {value}; null: absent"),
        ("new_value", value_type, f"after: {value}; null: absent (deleted)"),
        event,
        ("path", "string", "the node of the shell's tree that changed (docs/shell.md): log PATH shows its history"),
        ("record", "string", "Kafka's name of the record type that made the change, e.g. CONFIG_RECORD"),
        _ABORTED,
    )


_JSON = "as JSON text (as cat --json prints the node)"
COLUMNS.update({
    "config_changes": _changes(
        "the resource, e.g. 'topic orders', 'broker 1', 'broker <default>' (the cluster default)", "config name",
        "string", "config value; '[redacted]' for secrets (passwords, keys, JAAS), always",
        ("resource_type", "string", "topic, broker, cluster (the broker default), broker_logger, client_metrics or "
                                    "group"),
        ("resource_name", "string", "the topic's, broker's, group's ... name; null for cluster")),
    "acl_changes": _changes(
        "'ACL <id>'", "null (an ACL is created or deleted whole)", "string", f"the ACL binding, {_JSON}",
        ("acl_id", "string", "ACL id (Kafka base64)"),
        *_ACL_BINDING),
    "client_quota_changes": _changes(
        "the entity as the tree names it, e.g. 'client-id=<default>,user=alice'", "quota name, e.g. "
        "producer_byte_rate", "double", "quota value",
        ("quota_entity", ("array", ENTITY), "the entity: (type, name) pairs; a null name is the default entity")),
    "scram_changes": _changes(
        "'user <name>'", "the mechanism, SCRAM-SHA-256 or SCRAM-SHA-512", "int",
        "iterations (the salt and keys are never exported)",
        ("user", "string", "user name"),
        ("mechanism", "string", "SCRAM-SHA-256 or SCRAM-SHA-512")),
    "feature_changes": _changes(
        "'feature <name>'; 'quorum' for kraft.version", "feature name; null for kraft.version", "int",
        "finalized level",
        ("feature", "string", "feature name: metadata.version, group.version, ..., and kraft.version (the "
                              "quorum's KRaftVersionRecord)")),
    "topic_changes": _changes(
        "'topic <name>'", "null for the topic itself (created, deleted); the partition id for a partition",
        "string", "the topic's {id, name} (for the topic) or the partition's state, " + _JSON,
        ("topic", "string", "topic name"),
        ("topic_id", "string", "topic id (Kafka base64): a deleted topic and one re-created with its name differ "
                               "here"),
        ("partition", "int", "partition id; null for the topic itself"),
        _FIELDS,
        ("leader", "int", "a partition's leader after the change (before it, for a deletion); null for a topic"),
        ("leader_epoch", "int", "a partition's leader epoch after the change (before it, for a deletion)"),
        ("isr", ("array", "int"), "a partition's ISR after the change (before it, for a deletion)")),
    "broker_changes": _changes(
        "'broker <id>'", "null (the registration changes as a whole)", "string",
        "the registration (the files of /brokers/<id>), " + _JSON,
        ("broker_id", "int", "broker id"),
        ("broker_epoch", "long", "the registration's broker epoch after the change (before it, for an "
                                 "unregistration): a new epoch is a new registration"),
        ("incarnation_id", "string", "the registration's incarnation id (Kafka base64) after the change (before it, "
                                     "for an unregistration): a restarted broker has a new one"),
        ("fenced", "boolean", "fenced after the change; null when unregistered"),
        ("in_controlled_shutdown", "boolean", "in controlled shutdown after the change; null when unregistered"),
        _FIELDS,
        event=("event", "string", "register (new, or a new epoch), unregister, fence, unfence, controlled_shutdown, "
                                  "cordon (its cordoned log directories) or change")),
    "voter_changes": _changes(
        "'voter <id>'", "the voter id", "string", "the voter ({id, directory-id, endpoints}), " + _JSON,
        ("voter_id", "int", "voter (controller) node id"),
        ("directory_id", "string", "the voter's directory id (Kafka base64) after the change (before it, when "
                                   "removed): a controller on a new disk is a new voter"),
        _FIELDS,
        event=("event", "string", "created (added to the voters), deleted (removed) or changed (its endpoints or "
                                  "directory)")),
    "gaps": (
        ("first_offset", "long", "the first record missing: records first_offset .. resume_offset - 1 have no row "
                                 "(absent from the archive, or damaged and not replayed)"),
        ("resume_offset", "long", "the end offset of the snapshot the tables start again from: the state at "
                                  "resume_offset - 1 is that snapshot's, and rows go on after it; null: the history "
                                  "ends at the gap"),
        ("reason", "string", "why, in one line: the archive's manifest (the recorder fell behind the leader's log "
                             "start and fetched a snapshot), or the damage found in the segments"),
        ("recorded_ms", "long", "when the recorder wrote the gap down (epoch ms); null for damage"),
    ),
})
COLUMNS["partitions_over_time"] = (("as_of_offset", "long", "the offset asked for: the image at or before it"),
                                   *COLUMNS["partitions"])

IMAGE_KINDS = ("partitions", "brokers", "voters", "configs", "features", "acls", "client_quotas", "scram_users",
               "delegation_tokens", "producer_ids", "generic")
HISTORY_KINDS = HISTORY_TABLES

def type_name(t: Any) -> str:
    """``array<int>``, ``struct<name:string,...>``: the SQL spelling of a type spec."""
    if isinstance(t, str):
        return t
    if t[0] == "array":
        return f"array<{type_name(t[1])}>"
    return "struct<" + ",".join(f"{n}:{type_name(s)}" for n, s in t[1]) + ">"


# kind -> column -> "type: description"
SCHEMA_DOCS: dict[str, dict[str, str]] = {kind: {name: f"{type_name(t)}: {doc}" for name, t, doc in columns}
                                          for kind, columns in COLUMNS.items()}


def column_names(kind: str) -> list[str]:
    return [name for name, _, _ in COLUMNS[kind]]


def _spark_type(t: Any) -> Any:
    from pyspark.sql import types as T

    if isinstance(t, str):
        return {"string": T.StringType(), "int": T.IntegerType(), "long": T.LongType(),
                "boolean": T.BooleanType(), "double": T.DoubleType()}[t]
    if t[0] == "array":
        return T.ArrayType(_spark_type(t[1]), containsNull=True)
    return T.StructType([T.StructField(n, _spark_type(s), True) for n, s in t[1]])


def spark_schema(kind: str) -> Any:
    """The pyspark StructType of table ``kind`` (imports pyspark)."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(name, _spark_type(t), True) for name, t, _ in COLUMNS[kind]])


def _arrow_type(t: Any) -> Any:
    import pyarrow as pa

    if isinstance(t, str):
        return {"string": pa.string(), "int": pa.int32(), "long": pa.int64(), "boolean": pa.bool_(),
                "double": pa.float64()}[t]
    if t[0] == "array":
        return pa.list_(_arrow_type(t[1]))
    return pa.struct([(n, _arrow_type(s)) for n, s in t[1]])


def arrow_schema(kind: str) -> Any:
    """The pyarrow schema of table ``kind`` (imports pyarrow)."""
    import pyarrow as pa

    return pa.schema([(name, _arrow_type(t)) for name, t, _ in COLUMNS[kind]])
