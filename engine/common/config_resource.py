"""Config resources: what a ConfigRecord, DescribeConfigs or AlterConfigs names (Kafka's
``org.apache.kafka.common.config.ConfigResource``).

The one table of Kafka's resource type ids. A broker resource named ``""`` is the cluster-wide
default of every broker (``BROKER_DEFAULT``), which Kafka's tools call the cluster's configs.
Records carry the type as an int8 that may be none of these (a damaged or newer log): such a
value is kept as the plain int, never refused here.
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple


class ConfigResourceType(IntEnum):
    """Kafka's ``ConfigResource.Type`` ids."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32

    @classmethod
    def for_id(cls, type_id: int) -> "ConfigResourceType":
        """Kafka's ``Type.forId``: the type of ``type_id``, UNKNOWN for an id it does not define."""
        return _BY_ID.get(type_id, cls.UNKNOWN)


_BY_ID = {t.value: t for t in ConfigResourceType}


def config_resource_type(type_id: int) -> int:
    """``type_id`` as its ConfigResourceType, or the int itself for an id Kafka does not define."""
    return _BY_ID.get(type_id, type_id)


def config_resource_type_name(type_id: int) -> str:
    """Kafka's name for a resource type (``TOPIC``, ``BROKER``, ...), or the number for any
    other id, UNKNOWN's 0 included: no resource of a known kind is ever typed 0."""
    found = _BY_ID.get(type_id)
    return found.name if found is not None and found is not ConfigResourceType.UNKNOWN else str(type_id)


class ConfigResource(NamedTuple):
    """A resource configs belong to. A tuple: ``ConfigResource(TOPIC, "orders") == (2, "orders")``."""

    type: int  # a ConfigResourceType, or the plain int of an id Kafka does not define
    name: str

    @property
    def is_default(self) -> bool:
        """The default of every resource of its type (Kafka's ``ConfigResource.isDefault``)."""
        return not self.name


BROKER_DEFAULT = ConfigResource(ConfigResourceType.BROKER, "")


def topic_resource(name: str) -> ConfigResource:
    return ConfigResource(ConfigResourceType.TOPIC, name)


def broker_resource(broker: int | str) -> ConfigResource:
    """A broker's own configs (``broker`` its id); ``BROKER_DEFAULT`` is every broker's default."""
    return ConfigResource(ConfigResourceType.BROKER, str(broker))


__all__ = ["BROKER_DEFAULT", "ConfigResource", "ConfigResourceType", "broker_resource", "config_resource_type",
           "config_resource_type_name", "topic_resource"]
