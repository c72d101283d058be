"""The catalogue of metadata record types, pinned to what Apache Kafka 3.3 to 4.4 writes.

The table below is stated from Kafka's schema definitions (api keys and valid versions), not
read from our generated module, so a record type or version lost in regeneration fails here.
"""

from __future__ import annotations

from engine.records.metadata_records import RECORD_CLASSES, RECORD_TYPE_NAMES

KAFKA_4_4 = {
    0: ("REGISTER_BROKER_RECORD", 4), 1: ("UNREGISTER_BROKER_RECORD", 0), 2: ("TOPIC_RECORD", 0),
    3: ("PARTITION_RECORD", 2), 4: ("CONFIG_RECORD", 0), 5: ("PARTITION_CHANGE_RECORD", 2),
    7: ("FENCE_BROKER_RECORD", 0), 8: ("UNFENCE_BROKER_RECORD", 0), 9: ("REMOVE_TOPIC_RECORD", 0),
    10: ("DELEGATION_TOKEN_RECORD", 0), 11: ("USER_SCRAM_CREDENTIAL_RECORD", 0),
    12: ("FEATURE_LEVEL_RECORD", 0), 14: ("CLIENT_QUOTA_RECORD", 0), 15: ("PRODUCER_IDS_RECORD", 0),
    17: ("BROKER_REGISTRATION_CHANGE_RECORD", 3), 18: ("ACCESS_CONTROL_ENTRY_RECORD", 0),
    19: ("REMOVE_ACCESS_CONTROL_ENTRY_RECORD", 0), 20: ("NO_OP_RECORD", 0), 21: ("ZK_MIGRATION_STATE_RECORD", 0),
    22: ("REMOVE_USER_SCRAM_CREDENTIAL_RECORD", 0), 23: ("BEGIN_TRANSACTION_RECORD", 0),
    24: ("END_TRANSACTION_RECORD", 0), 25: ("ABORT_TRANSACTION_RECORD", 0),
    26: ("REMOVE_DELEGATION_TOKEN_RECORD", 0), 27: ("REGISTER_CONTROLLER_RECORD", 0), 28: ("CLEAR_ELR_RECORD", 0),
    29: ("UNREGISTER_CONTROLLER_RECORD", 0),
}


def test_every_kafka_record_type_and_version_is_known() -> None:
    expected = {(key, version) for key, (_, top) in KAFKA_4_4.items() for version in range(top + 1)}
    assert set(RECORD_CLASSES) == expected
    assert RECORD_TYPE_NAMES == {key: name for key, (name, _) in KAFKA_4_4.items()}
    for (key, version), cls in RECORD_CLASSES.items():
        assert cls.api_key == key and cls.__version__ == version and cls.type_name == KAFKA_4_4[key][0]


def test_fields_that_changed_across_versions() -> None:
    """Spot checks of version-dependent fields (tags and positions are what break compatibility)."""
    import dataclasses

    def names(key: int, version: int) -> list[str]:
        return [f.name for f in dataclasses.fields(RECORD_CLASSES[(key, version)])]

    def tag(key: int, version: int, name: str) -> int | None:
        return next(f.metadata.get("tag") for f in dataclasses.fields(RECORD_CLASSES[(key, version)])
                    if f.name == name)

    assert "in_controlled_shutdown" not in names(0, 0) and "in_controlled_shutdown" in names(0, 1)
    assert names(0, 2)[1] == "is_migrating_zk_broker" and tag(0, 3, "log_dirs") == 0
    assert "directories" in names(3, 1) and tag(3, 1, "directories") is None
    assert tag(3, 2, "eligible_leader_replicas") == 1 and tag(3, 2, "last_known_elr") == 2
    assert tag(5, 1, "directories") == 8 and tag(5, 2, "eligible_leader_replicas") == 6
    assert tag(17, 0, "fenced") == 0 and tag(17, 1, "in_controlled_shutdown") == 1 and tag(17, 2, "log_dirs") == 2
    assert tag(0, 4, "cordoned_log_dirs") == 1 and "cordoned_log_dirs" not in names(0, 3)
    assert tag(17, 3, "cordoned_log_dirs") == 3 and "cordoned_log_dirs" not in names(17, 2)
