"""Record versions by metadata.version, against what Kafka 4.4.0's MetadataVersion answers.

The table was printed by jshell on Kafka 4.4.0's kafka-server-common jar (registerBrokerRecordVersion,
partitionRecordVersion, partitionChangeRecordVersion, isMetadataTransactionSupported,
isDirectoryAssignmentSupported, isElrSupported, isScramSupported, isDelegationTokenSupported,
isControllerRegistrationSupported, isLeaderEpochBumpRequiredOnIsrShrink, isCordonedLogDirsSupported).
"""

from engine.image.metadata_version import BY_LEVEL, record_versions

KAFKA = [
    "3.3-IV3   7 1 0 0 FFFFFFTF",
    "3.4-IV0   8 2 0 0 FFFFFFTF",
    "3.5-IV0   9 2 0 0 FFFFFFTF",
    "3.5-IV1  10 2 0 0 FFFFFFTF",
    "3.5-IV2  11 2 0 0 FFFTFFTF",
    "3.6-IV0  12 2 0 0 FFFTFFFF",
    "3.6-IV1  13 2 0 0 TFFTFFFF",
    "3.6-IV2  14 2 0 0 TFFTTFFF",
    "3.7-IV0  15 2 0 0 TFFTTTFF",
    "3.7-IV1  16 2 0 0 TFFTTTFF",
    "3.7-IV2  17 3 1 1 TTFTTTFF",
    "3.7-IV3  18 3 1 1 TTFTTTFF",
    "3.7-IV4  19 3 1 1 TTFTTTFF",
    "3.8-IV0  20 3 1 1 TTFTTTFF",
    "3.9-IV0  21 3 1 1 TTFTTTFF",
    "4.0-IV0  22 3 1 1 TTFTTTFF",
    "4.0-IV1  23 3 2 2 TTTTTTFF",
    "4.0-IV2  24 3 2 2 TTTTTTFF",
    "4.0-IV3  25 3 2 2 TTTTTTFF",
    "4.1-IV0  26 3 2 2 TTTTTTFF",
    "4.1-IV1  27 3 2 2 TTTTTTFF",
    "4.2-IV0  28 3 2 2 TTTTTTFF",
    "4.2-IV1  29 3 2 2 TTTTTTFF",
    "4.3-IV0  30 4 2 2 TTTTTTFT",
    "4.4-IV0  31 4 2 2 TTTTTTFT",
    "4.4-IV1  32 4 2 2 TTTTTTFT",
    "4.4-IV2  33 4 2 2 TTTTTTFT",
    "4.5-IV0  34 4 2 2 TTTTTTFT",
]


def test_record_versions_are_kafkas_at_every_level() -> None:
    assert len(KAFKA) == len(BY_LEVEL)
    for row in KAFKA:
        name, level, broker, partition, change, flags = row.split()
        versions = record_versions(int(level))
        assert BY_LEVEL[int(level)].name == name
        assert (versions.register_broker, versions.partition, versions.partition_change) == \
            (int(broker), int(partition), int(change)), name
        ours = (versions.metadata_transactions, versions.directory_assignment, versions.elr, versions.scram,
                versions.delegation_tokens, versions.controller_registration,
                versions.leader_epoch_bump_on_isr_shrink, versions.cordoned_log_dirs)
        assert ours == tuple(flag == "T" for flag in flags), name


def test_broker_registration_change_versions_follow_directories_and_cordoning() -> None:
    assert [record_versions(level).broker_registration_change for level in (7, 16, 17, 29, 30)] == [1, 1, 2, 2, 3]
