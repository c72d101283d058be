"""Our metadata.version table (engine/image/metadata_version.py: levels and record_versions;
engine/controller/feature_control.py: the levels whose downgrade loses metadata) against Kafka's
own MetadataVersion enum, asked by reflection: every level both know, every answer we model.
Kafka 4.1.2 and the newest server both answer; a level one knows and the other not is checked
by name (4.1.2 stops at 4.2-IV1; 4.4.0 adds 4.3-IV0 .. 4.5-IV0)."""

from __future__ import annotations

import pytest

from engine.controller.feature_control import METADATA_CHANGED_LEVELS
from engine.image.metadata_version import BY_LEVEL, BY_NAME, record_versions

pytestmark = pytest.mark.kafka

# Kafka's MetadataVersion method -> our RecordVersions field (a method this Kafka lacks is false)
MODELLED = {
    "registerBrokerRecordVersion": "register_broker",
    "partitionRecordVersion": "partition",
    "partitionChangeRecordVersion": "partition_change",
    "isMetadataTransactionSupported": "metadata_transactions",
    "isDirectoryAssignmentSupported": "directory_assignment",
    "isElrSupported": "elr",
    "isScramSupported": "scram",
    "isDelegationTokenSupported": "delegation_tokens",
    "isControllerRegistrationSupported": "controller_registration",
    "isLeaderEpochBumpRequiredOnIsrShrink": "leader_epoch_bump_on_isr_shrink",
    "isCordonedLogDirsSupported": "cordoned_log_dirs",
}
# answered by Kafka, not modelled by our table (each a gap to know of, not a claim of ours):
# featureLevel and didMetadataChange are checked apart; isProduction differs on purpose (ours
# stops at the release the suite proves end to end, LATEST_PRODUCTION); the others are not used.
NOT_MODELLED = {
    "featureLevel", "didMetadataChange", "isProduction",
    "isMigrationSupported",  # ZooKeeper migration: no ZooKeeper here
    "registerControllerRecordVersion",  # always 0 where it does not throw
    "fetchRequestVersion", "listOffsetRequestVersion",  # inter-broker protocol, not the metadata log
    "isCidrAclSupported",  # 4.4-IV1: CIDR ACL hosts, not implemented by our authorizer
    "isControllerUnregistrationSupported",  # 4.4-IV2: not implemented by our controller
}


@pytest.fixture(scope="module")
def kafka_table(kafka_classes) -> dict[str, dict]:
    return {row.pop("name"): row for row in kafka_classes.call("MetadataVersionTable")}


def test_every_level_kafka_knows_we_know_at_the_same_feature_level(kafka_table) -> None:
    assert {name: row["featureLevel"] for name, row in kafka_table.items()} == \
        {name: BY_NAME[name].level for name in kafka_table if name in BY_NAME}
    # the newest Kafka knows exactly our levels; an older one a prefix of them
    assert list(kafka_table) == [mv.name for _, mv in sorted(BY_LEVEL.items())][:len(kafka_table)]


def test_record_versions_and_abilities_are_kafkas_at_every_level(kafka_table) -> None:
    for name, row in kafka_table.items():
        ours = record_versions(BY_NAME[name].level)._asdict()
        kafkas = {field: row.get(method, False) for method, field in MODELLED.items()}
        assert {field: ours[field] for field in MODELLED.values()} == kafkas, name


def test_the_levels_whose_downgrade_loses_metadata_are_kafkas(kafka_table) -> None:
    changed = {BY_NAME[name].level for name, row in kafka_table.items() if row["didMetadataChange"]}
    known = {BY_NAME[name].level for name in kafka_table}
    assert METADATA_CHANGED_LEVELS & known == changed


def test_every_answer_kafka_gives_is_modelled_or_known_not_to_be(kafka_table) -> None:
    """A new MetadataVersion method in a newer Kafka fails here until it is modelled or listed."""
    answered = set().union(*(row.keys() for row in kafka_table.values()))
    assert answered - MODELLED.keys() - NOT_MODELLED == set()
