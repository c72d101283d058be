"""Dynamic configs by resource (Kafka's ConfigurationsImage, ConfigurationImage, ConfigurationsDelta
and ConfigurationDelta).

A ConfigurationsImage reads as the map of ConfigResource (engine.common.config_resource) to its
ConfigurationImage, which reads as the map of config keys to values: ``image.configs.get(
topic_resource("orders"), {}).get("retention.ms")``. A ConfigResource is a tuple, so ``(2, "orders")``
finds the same entry.

Replay: a ConfigRecord sets a key, or deletes it when its value is null; a resource left with no
key leaves the image. RemoveTopicRecord deletes the topic's configs (MetadataDelta asks, as Kafka's).
"""

from __future__ import annotations

from typing import ClassVar, Mapping

from engine.common.config_resource import ConfigResource, config_resource_type, topic_resource
from engine.image.domain_delta import EntriesDelta, NestedEntriesDelta
from engine.image.image_map import EMPTY_MAP, ImageMap
from engine.records import metadata_records as m


class ConfigurationImage(ImageMap[str, str]):
    """One resource's configs: key -> value."""

    __slots__ = ("resource",)

    def __init__(self, resource: ConfigResource, data: Mapping[str, str] = EMPTY_MAP) -> None:
        super().__init__(data)
        object.__setattr__(self, "resource", resource)

    @property
    def data(self) -> Mapping[str, str]:
        return self._entries

    def _same_extras(self, other: ImageMap) -> bool:
        return self.resource == other.resource  # type: ignore[attr-defined]


class ConfigurationsImage(ImageMap[ConfigResource, ConfigurationImage]):
    """Every resource with configs."""

    __slots__ = ()
    EMPTY: ClassVar["ConfigurationsImage"]

    def config_map(self, resource: ConfigResource) -> Mapping[str, str]:
        """``resource``'s configs, empty when it has none (Kafka's ``configMapForResource``)."""
        return self._entries.get(resource, EMPTY_MAP)


ConfigurationsImage.EMPTY = ConfigurationsImage()


class ConfigurationDelta(EntriesDelta):
    """The changes to one resource's configs."""

    __slots__ = ()

    def apply(self) -> ConfigurationImage:
        return ConfigurationImage(self.image.resource, self.entries())


class ConfigurationsDelta(NestedEntriesDelta):
    """Changes to the configs. Change set domain: ``configs``, by (ConfigResource, config key)."""

    DOMAIN, DOMAINS = "configs", ("configs",)
    __slots__ = ()

    def replay_config(self, record: m.ConfigRecordV0) -> None:
        resource = ConfigResource(config_resource_type(record.resource_type), record.resource_name)
        self._set(resource, record.name, record.value)

    def replay_remove_topic(self, record: m.RemoveTopicRecordV0, topic_name: str) -> None:
        """The topic ``topic_name`` (``record``'s) is gone: so are its configs."""
        resource = topic_resource(topic_name)
        for key in self._subject_keys(resource):
            self._set(resource, key, None)

    def _subject_keys(self, resource: ConfigResource) -> set[str]:
        delta = self._changes.get(resource)
        return set(self.image.config_map(resource)) if delta is None else delta.keys()

    def _subject_delta(self, subject: ConfigResource) -> ConfigurationDelta:
        return ConfigurationDelta(self.image.get(subject) or ConfigurationImage(subject))


__all__ = ["ConfigurationDelta", "ConfigurationImage", "ConfigurationsDelta", "ConfigurationsImage"]
