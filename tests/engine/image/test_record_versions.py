"""Record versions by metadata.version. Kafka's own MetadataVersion is compared live, level by
level, in tests/differential/test_diff_metadata_version.py; what is left here is ours alone."""

from engine.image.metadata_version import BY_LEVEL, record_versions


def test_broker_registration_change_versions_follow_directories_and_cordoning() -> None:
    # Kafka has no MetadataVersion method for this one: the version follows the fields it carries
    assert [record_versions(level).broker_registration_change for level in (7, 16, 17, 29, 30)] == [1, 1, 2, 2, 3]


def test_record_versions_never_go_down_as_the_level_goes_up() -> None:
    rows = [record_versions(level) for level in sorted(BY_LEVEL)]
    for before, after in zip(rows, rows[1:]):
        assert after.register_broker >= before.register_broker and after.partition >= before.partition
        assert after.partition_change >= before.partition_change
