"""Our metadata.version table against Kafka's own MetadataVersion and Feature classes, asked live.

For every MetadataVersion of the Kafka under test (4.1.2, and the newest: 4.4.0 adds 4.3-IV0 and
4.4-IV0..IV2, production, and 4.5-IV0, not yet): its name at its level and which are production,
and the feature levels a new cluster at it is formatted with (share.version 2 from 4.4-IV0), are
ours. The record versions and abilities at each level are tests/differential/test_diff_metadata_version.py's.
"""

from __future__ import annotations

import pytest

from engine.cluster.kafka_dist import version_key
from engine.image.metadata_version import BY_LEVEL, default_feature_levels

pytestmark = pytest.mark.kafka

# kraft.version is no FeatureLevelRecord: it lives in the first snapshot's KRaftVersionRecord
NOT_FORMATTED = {"kraft.version"}


@pytest.fixture(scope="module")
def kafka_versions(kafka_classes) -> dict:
    return kafka_classes.call("MetadataVersions", answers=[])


def test_every_kafka_metadata_version_is_ours_at_its_level(kafka_versions, kafka_classes) -> None:
    kafkas = {row["level"]: row["name"] for row in kafka_versions["versions"]}
    assert {level: BY_LEVEL[level].name for level in kafkas if level in BY_LEVEL} == kafkas
    assert kafka_versions["latestProduction"] in {mv.name for mv in BY_LEVEL.values()}
    if version_key(kafka_classes.version) >= (4, 4, 0):
        assert {"4.3-IV0", "4.4-IV0", "4.4-IV1", "4.4-IV2"} <= {r["name"] for r in kafka_versions["versions"]
                                                                  if r["production"]}


def test_a_new_cluster_gets_kafkas_default_feature_levels(kafka_versions) -> None:
    problems = []
    for row in kafka_versions["versions"]:
        kafka = {name: level for name, level in row["defaults"].items() if level > 0 and name not in NOT_FORMATTED}
        ours = default_feature_levels(BY_LEVEL[row["level"]])
        if ours != kafka:
            problems.append(f"{row['name']}: Kafka formats {kafka}, we {ours}")
    assert problems == []
    newest = max(kafka_versions["versions"], key=lambda r: r["level"])
    assert newest["defaults"].get("share.version", 0) >= 1  # not vacuous: features were asked
