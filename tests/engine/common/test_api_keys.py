"""The one table of Kafka's API keys (engine/common/api_keys.py) agrees with kio's messages:
every request and response class kio has carries the table's number for its API, and kio's
index of API names is the table's, name for name."""

from __future__ import annotations

import pytest

from engine.common.api_keys import ApiKeys, EndpointType
from engine.net.errors import ProtocolError
from engine.net.kafka_protocol import request_class, response_class
from engine.records.kio_codec import API_NAMES

# The ZooKeeper era's inter-broker APIs: in Kafka's table so that their numbers stay taken, gone from kio
REMOVED = {ApiKeys.LEADER_AND_ISR, ApiKeys.STOP_REPLICA, ApiKeys.UPDATE_METADATA, ApiKeys.CONTROLLED_SHUTDOWN}
MAX_VERSION_PROBED = 30  # above every version any API has (Fetch, the highest, is at 18)


def _message_classes(key: ApiKeys) -> list[type]:
    found = []
    for version in range(MAX_VERSION_PROBED):
        for lookup in (request_class, response_class):
            try:
                found.append(lookup(key, version))
            except ProtocolError:
                continue
    return found


def test_kio_names_every_api_of_the_table_and_no_other() -> None:
    assert {int(key) for key in ApiKeys} - set(API_NAMES) == {int(key) for key in REMOVED}
    assert set(API_NAMES) <= {int(key) for key in ApiKeys}


@pytest.mark.parametrize("key", [key for key in ApiKeys if key not in REMOVED], ids=lambda key: key.name)
def test_kio_messages_carry_the_tables_number(key: ApiKeys) -> None:
    assert API_NAMES[key] == key.name.lower()  # Kafka's enum name is kio's module name, upper-cased
    classes = _message_classes(key)
    assert classes, f"kio has no message of {key.name}"
    assert {cls.__api_key__ for cls in classes} == {key}


def test_a_member_is_the_number_on_the_wire() -> None:
    """A table keyed by members answers the header's plain int, and text shows the number."""
    table = {ApiKeys.ENVELOPE: "envelope"}
    assert table[58] == "envelope" and ApiKeys(60) is ApiKeys.DESCRIBE_CLUSTER
    assert f"api key {ApiKeys.FETCH}" == "api key 1"
    assert [int(t) for t in EndpointType] == [0, 1, 2]
