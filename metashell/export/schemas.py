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

# The tables of the log's history (metashell.export.history_tables), beside the image's tables.
HISTORY_TABLES = ("records", "partition_changes", "broker_fencing", "controller_registrations", "leader_changes")

INT_ARRAY = ("array", "int")
STR_ARRAY = ("array", "string")
ENDPOINT = ("struct", (("name", "string"), ("host", "string"), ("port", "int"), ("security_protocol", "int")))
ENTITY = ("struct", (("type", "string"), ("name", "string")))

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
        ("resource_type", "string", "TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER, ..."),
        ("resource_name", "string", "resource name or pattern"),
        ("pattern_type", "string", "LITERAL, PREFIXED, ..."),
        ("principal", "string", "principal, e.g. User:alice"),
        ("host", "string", "host, * for any"),
        ("operation", "string", "READ, WRITE, ALL, ..."),
        ("permission_type", "string", "ALLOW or DENY"),
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
COLUMNS["partitions_over_time"] = (("as_of_offset", "long", "the offset asked for: the image at or before it"),
                                   *COLUMNS["partitions"])

IMAGE_KINDS = ("partitions", "brokers", "voters", "configs", "features", "acls", "client_quotas", "scram_users",
               "delegation_tokens", "producer_ids", "generic")
HISTORY_KINDS = ("records", "partition_changes", "broker_fencing", "controller_registrations", "leader_changes")

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
