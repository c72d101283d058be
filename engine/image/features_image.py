"""The finalized features (Kafka's FeaturesImage and FeaturesDelta).

A FeaturesImage reads as the map of feature names to their finalized levels, metadata.version
included (``image.features.get("metadata.version")``), and keeps the ZooKeeper migration state
a ZkMigrationStateRecord set (Kafka 3.x; None where none was read).

Replay: a FeatureLevelRecord at level 0 removes the feature; a ZkMigrationStateRecord sets the
migration state.
"""

from __future__ import annotations

from typing import ClassVar, Mapping

from engine.image.domain_delta import REMOVED, KeyedDelta, ReplayJournal, merged
from engine.image.image_map import EMPTY_MAP, ImageMap
from engine.records import metadata_records as m

METADATA_VERSION = "metadata.version"


class FeaturesImage(ImageMap[str, int]):
    """Finalized feature levels by name, and the ZooKeeper migration state."""

    __slots__ = ("zk_migration_state",)
    EMPTY: ClassVar["FeaturesImage"]

    def __init__(self, finalized_versions: Mapping[str, int] = EMPTY_MAP, zk_migration_state: int | None = None):
        super().__init__(finalized_versions)
        object.__setattr__(self, "zk_migration_state", zk_migration_state)

    @property
    def finalized_versions(self) -> Mapping[str, int]:
        return self._entries

    @property
    def metadata_version(self) -> int | None:
        return self._entries.get(METADATA_VERSION)

    def _same_extras(self, other: ImageMap) -> bool:
        return self.zk_migration_state == other.zk_migration_state  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"FeaturesImage({dict(self._entries)!r}, zk_migration_state={self.zk_migration_state!r})"


FeaturesImage.EMPTY = FeaturesImage()


class FeaturesDelta(KeyedDelta):
    """Changes to the finalized features. Change set domains: ``features`` (by name) and
    ``zk_migration_state``."""

    DOMAIN, DOMAINS = "features", ("features", "zk_migration_state")
    __slots__ = ("_zk_migration_state",)

    def __init__(self, image: FeaturesImage, journal: ReplayJournal | None = None) -> None:
        super().__init__(image, journal)
        self._zk_migration_state: int | None = None

    def replay_feature_level(self, record: m.FeatureLevelRecordV0) -> None:
        self._put(record.name, REMOVED if record.feature_level == 0 else record.feature_level)

    def replay_zk_migration_state(self, record: m.ZkMigrationStateRecordV0) -> None:
        self._note("zk_migration_state", None, self.value_now("zk_migration_state", None))
        self._zk_migration_state = record.zk_migration_state

    def value_in_image(self, domain: str, key: object) -> object:
        if domain == "zk_migration_state":
            return self.image.zk_migration_state
        return self.image.get(key)

    def value_now(self, domain: str, key: object) -> object:
        if domain == "zk_migration_state":
            return self.image.zk_migration_state if self._zk_migration_state is None else self._zk_migration_state
        return super().value_now(domain, key)

    def apply(self) -> FeaturesImage:
        if not self._changes and self._zk_migration_state is None:
            return self.image
        levels = merged(self.image, self._changes) if self._changes else self.image.finalized_versions
        return FeaturesImage(levels, self.value_now("zk_migration_state", None))


__all__ = ["METADATA_VERSION", "FeaturesDelta", "FeaturesImage"]
