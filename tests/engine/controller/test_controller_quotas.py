"""AlterClientQuotas (49) on the controller (Kafka's ClientQuotaControlManagerTest rhythm:
command, response, replay, state). Quirks marked "Kafka 4.1.2" were seen by driving Kafka's own
ClientQuotaControlManager with the same alterations."""

from __future__ import annotations

import math

import pytest

from engine.controller.client_quota_control import (
    COMMANDS, alter_client_quotas, current_quotas, entity_text, error_response)
from engine.controller.controller_result import ControllerResult
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, f64, protocol_module
from engine.records.metadata_record_serde import decode_metadata_value, encode_metadata_value
from tests.controller_helpers import bootstrapped, context, replayed, request

_req = protocol_module("alter_client_quotas", 1, "request")
NOT_SET = object()


def entry(entity: dict, **ops) -> object:
    """ops: key=value sets, key=None removes."""
    return _req.EntryData(
        entity=tuple(_req.EntityData(entity_type=t, entity_name=n) for t, n in entity.items()),
        # plain floats: a request off the wire may carry any double, NaN and infinities included
        ops=tuple(_req.OpData(key=k, value=0.0 if v is None else v, remove=v is None) for k, v in ops.items()))


def alter(image: MetadataImage, *entries, validate_only: bool = False) -> ControllerResult:
    return alter_client_quotas(context(image), request("alter_client_quotas", 1, entries=tuple(entries),
                                                       validate_only=validate_only))


def outcome(result: ControllerResult) -> list[tuple]:
    return [(tuple((e.entity_type, e.entity_name) for e in r.entity), r.error_code, r.error_message)
            for r in result.response.entries]


ALICE = (("user", "alice"),)


def test_set_replay_change_and_remove():
    image = bootstrapped()
    result = alter(image, entry({"user": "alice"}, producer_byte_rate=1024.0, request_percentage=12.5))
    assert outcome(result) == [(ALICE, ErrorCode.none, None)]
    assert result.atomic
    assert [(r.key, r.value, r.remove) for r in result.records] == \
        [("producer_byte_rate", 1024.0, False), ("request_percentage", 12.5, False)]
    image = replayed(image, result)
    assert dict(image.client_quotas[ALICE]) == {"producer_byte_rate": 1024.0, "request_percentage": 12.5}

    # the same value again writes nothing; another one writes one record
    same = alter(image, entry({"user": "alice"}, producer_byte_rate=1024.0))
    assert outcome(same) == [(ALICE, ErrorCode.none, None)] and same.records == []
    changed = alter(image, entry({"user": "alice"}, producer_byte_rate=2048.0, consumer_byte_rate=None))
    assert [(r.key, r.value, r.remove) for r in changed.records] == [("producer_byte_rate", 2048.0, False)]
    image = replayed(image, changed)

    removed = alter(image, entry({"user": "alice"}, producer_byte_rate=None, request_percentage=None))
    assert [(r.key, r.remove) for r in removed.records] == [("producer_byte_rate", True), ("request_percentage", True)]
    image = replayed(image, removed)
    assert ALICE not in image.client_quotas
    for record in (*result.records, *removed.records):
        assert decode_metadata_value(encode_metadata_value(record)) == record


def test_defaults_and_combined_entities():
    image = bootstrapped()
    result = alter(image,
                   entry({"user": None}, consumer_byte_rate=500.0),
                   entry({"user": "bob", "client-id": "app"}, controller_mutation_rate=0.5),
                   entry({"client-id": None, "user": None}, producer_byte_rate=1.0),
                   entry({"ip": None}, connection_creation_rate=10.0),
                   entry({"ip": "10.0.0.1"}, connection_creation_rate=20.0))
    assert [e for e, code, _ in outcome(result) if code == ErrorCode.none] == [
        (("user", None),), (("client-id", "app"), ("user", "bob")), (("client-id", None), ("user", None)),
        (("ip", None),), (("ip", "10.0.0.1"),)]
    # records list the types as Kafka's entity map does: client-id before user
    assert [(d.entity_type, d.entity_name) for d in result.records[1].entity] == [("client-id", "app"), ("user", "bob")]
    image = replayed(image, result)
    assert dict(image.client_quotas[(("client-id", "app"), ("user", "bob"))]) == {"controller_mutation_rate": 0.5}
    assert dict(image.client_quotas[(("ip", None),)]) == {"connection_creation_rate": 10.0}


def test_an_entity_whose_record_lists_types_in_another_order_is_found():
    record = m.ClientQuotaRecordV0(entity=(m.ClientQuotaRecordV0EntityData(entity_type="user", entity_name="u"),
                                           m.ClientQuotaRecordV0EntityData(entity_type="client-id", entity_name="c")),
                                   key="producer_byte_rate", value=f64(5.0), remove=False)
    image = replayed(bootstrapped(), ControllerResult([record], None))
    entity = (("client-id", "c"), ("user", "u"))
    assert dict(current_quotas(image, entity)) == {"producer_byte_rate": 5.0}
    assert alter(image, entry({"client-id": "c", "user": "u"}, producer_byte_rate=5.0)).records == []


INVALID = ErrorCode.invalid_request


@pytest.mark.parametrize("the_entry, message", [
    (entry({}, producer_byte_rate=1.0), "Invalid empty client quota entity"),
    (entry({"group": "g"}, producer_byte_rate=1.0), "Unhandled client quota entity type: group"),
    (entry({"user": ""}, producer_byte_rate=1.0), "Empty user not supported"),
    (entry({"client-id": ""}, producer_byte_rate=1.0), "Empty client-id not supported"),
    (entry({"ip": "1.2.3.4", "user": "u"}, connection_creation_rate=1.0),
     "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
    (entry({"ip": "not an ip!"}, connection_creation_rate=1.0), "not an ip! is not a valid IP or resolvable host."),
    (entry({"ip": "300.1.1.1"}, connection_creation_rate=1.0), "300.1.1.1 is not a valid IP or resolvable host."),
    (entry({"user": "u"}, bogus=1.0), "Invalid configuration key bogus"),
    (entry({"user": "u"}, connection_creation_rate=1.0), "Invalid configuration key connection_creation_rate"),
    (entry({"ip": "::1"}, producer_byte_rate=1.0), "Invalid configuration key producer_byte_rate"),
    (entry({"user": "u"}, producer_byte_rate=0.0), "Quota producer_byte_rate must be greater than 0"),
    (entry({"user": "u"}, request_percentage=-1.0), "Quota request_percentage must be greater than 0"),
    (entry({"user": "u"}, producer_byte_rate=10.5), "producer_byte_rate cannot be a fractional value."),
    (entry({"ip": "localhost"}, connection_creation_rate=5.5), "connection_creation_rate cannot be a fractional value."),
    (entry({"ip": "h"}, connection_creation_rate=2.0**31), "Proposed value for connection_creation_rate is too large for an INT."),
    (entry({"user": "u"}, consumer_byte_rate=math.inf), "Proposed value for consumer_byte_rate is too large for a LONG."),
    (entry({"user": "u"}, consumer_byte_rate=1e300), "Proposed value for consumer_byte_rate is too large for a LONG."),
    (entry({"user": "u"}, request_percentage=math.inf), "Quota request_percentage must be a finite number"),
    (entry({"user": "u"}, request_percentage=math.nan), "Quota request_percentage must be a finite number"),
    (entry({"user": "u"}, producer_byte_rate=math.nan), "Quota producer_byte_rate must be a finite number"),
])
def test_each_refusal(the_entry, message):
    result = alter(bootstrapped(), the_entry)
    assert [(code, text) for _, code, text in outcome(result)] == [(INVALID, message)]
    assert result.records == []


@pytest.mark.parametrize("the_entry", [
    entry({"user": "u"}, producer_byte_rate=9.223372036854775807e18),  # Long.MAX_VALUE as a double: Kafka 4.1.2 takes it
    entry({"ip": "1.2.3"}, connection_creation_rate=5.0),  # Java's short IPv4 form: Kafka 4.1.2 takes it
    entry({"ip": "[fe80::1]"}, connection_creation_rate=5.0),
    entry({"ip": "broker-1.example.com"}, connection_creation_rate=5.0),
    entry({"user": "u"}, producer_byte_rate=10.0000001),  # within Kafka's 1e-6 of a whole number
    entry({"user": "u"}, bogus=None),  # removing an unknown key is not checked, and does nothing
])
def test_accepted_edges(the_entry):
    result = alter(bootstrapped(), the_entry)
    assert [code for _, code, _ in outcome(result)] == [ErrorCode.none]


def test_one_bad_op_refuses_its_entity_only():
    result = alter(bootstrapped(), entry({"user": "a"}, producer_byte_rate=1.0, request_percentage=0.0),
                   entry({"user": "b"}, producer_byte_rate=1.0))
    assert [code for _, code, _ in outcome(result)] == [INVALID, ErrorCode.none]
    assert [r.entity[0].entity_name for r in result.records] == ["b"]


def test_duplicate_keys_and_entities_as_kafka_4_1_2_answers():
    ignoring = f"Ignoring duplicate entity {entity_text(ALICE)}"
    # a key twice: the entity is refused, with the duplicate-entity message
    dup_key = _req.EntryData(entity=(_req.EntityData(entity_type="user", entity_name="alice"),),
                             ops=(_req.OpData(key="producer_byte_rate", value=f64(100.0), remove=False),
                                  _req.OpData(key="producer_byte_rate", value=f64(200.0), remove=False)))
    result = alter(bootstrapped(), dup_key)
    assert outcome(result) == [(ALICE, INVALID, ignoring)] and result.records == []
    # an entity twice: refused, though the first entry's records are kept
    result = alter(bootstrapped(), entry({"user": "alice"}, producer_byte_rate=100.0),
                   entry({"user": "alice"}, producer_byte_rate=100.0))
    assert outcome(result) == [(ALICE, INVALID, ignoring)]
    assert [(r.key, r.value) for r in result.records] == [("producer_byte_rate", 100.0)]


def test_validate_only_answers_and_writes_nothing():
    result = alter(bootstrapped(), entry({"user": "alice"}, producer_byte_rate=1.0),
                   entry({"user": ""}, producer_byte_rate=1.0), validate_only=True)
    assert [code for _, code, _ in outcome(result)] == [ErrorCode.none, INVALID]
    assert result.records == []


def test_entity_text_is_kafkas():
    assert entity_text((("client-id", "b"), ("user", None))) == "ClientQuotaEntity(entries={client-id=b, user=null})"


def test_the_error_response_names_each_entity_once():
    req = request("alter_client_quotas", 1, validate_only=False, entries=(
        entry({"user": "a"}, producer_byte_rate=1.0), entry({"user": "a"}, consumer_byte_rate=1.0),
        entry({"ip": None}, connection_creation_rate=1.0)))
    response = error_response(req, ErrorCode.not_controller, "gone")
    assert [(tuple((e.entity_type, e.entity_name) for e in r.entity), r.error_code, r.error_message)
            for r in response.entries] == [((("user", "a"),), ErrorCode.not_controller, "gone"),
                                           ((("ip", None),), ErrorCode.not_controller, "gone")]
    assert [(c.api_key, c.name, c.min_version, c.max_version, c.read_only) for c in COMMANDS] == \
        [(49, "alter_client_quotas", 0, 1, False)]
