"""engine.records.fast_encode writes exactly kio's bytes, for every metadata record class.

kio's encode_entity is the reference: hypothesis instances of every class (nulls, empty and
full arrays, tagged fields at and off their defaults), long arrays and strings (past a one-byte
length, where the compiled encoder hands over to its general form), out-of-range numbers
(refused with kio's error, not written wrong), and every record of the real corpus.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.records import fast_encode
from engine.records.kio_codec import encode_entity
from engine.records.metadata_record_serde import (
    MetadataRecord,
    UnknownRecord,
    decode_metadata_value,
    decode_record,
    encode_metadata_value,
    encode_record,
)
from engine.records.metadata_records import (
    RECORD_CLASSES,
    ConfigRecordV0,
    PartitionChangeRecordV2,
    PartitionRecordV2,
    RegisterBrokerRecordV4,
    RegisterBrokerRecordV4BrokerEndpoint,
)
from engine.storage.log_reader import read_batches
from tests.conftest import CORPUS, corpus_params
from tests.strategies import record_strategy, simplest_record

RECORD_KEYS = sorted(RECORD_CLASSES)
RECORD_IDS = [f"{RECORD_CLASSES[k].__name__}" for k in RECORD_KEYS]
_HEADER_OF = {k: bytes((1, k[0], k[1])) for k in RECORD_KEYS}  # frame 1, api key, version: all < 128


@pytest.mark.parametrize("key", RECORD_KEYS, ids=RECORD_IDS)
def test_every_class_is_compiled(key: tuple[int, int]) -> None:
    # none falls back to kio: the fast path covers every field shape of our records
    assert fast_encode.is_compiled(RECORD_CLASSES[key])


@pytest.mark.parametrize("key", RECORD_KEYS, ids=RECORD_IDS)
def test_hypothesis_instances_encode_as_kio_does(key: tuple[int, int]) -> None:
    cls = RECORD_CLASSES[key]

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(record_strategy(cls))
    def check(record: MetadataRecord) -> None:
        expected = encode_entity(record)
        assert fast_encode.encode(record) == expected
        value = encode_metadata_value(record)
        assert value == _HEADER_OF[key] + expected
        assert decode_metadata_value(value) == record

    check()


@pytest.mark.parametrize("key", RECORD_KEYS, ids=RECORD_IDS)
def test_simplest_instance_and_every_tag_off_default(key: tuple[int, int]) -> None:
    cls = RECORD_CLASSES[key]
    record = simplest_record(cls)
    assert fast_encode.encode(record) == encode_entity(record)
    # each tagged field alone off its default: it is written, in its place among the tags
    for field in dataclasses.fields(cls):
        if "tag" not in field.metadata:
            continue
        changed = dataclasses.replace(record, **{field.name: _off_default(field)})
        assert fast_encode.encode(changed) == encode_entity(changed), field.name
        assert decode_metadata_value(encode_metadata_value(changed)) == changed


def _off_default(field: dataclasses.Field) -> object:
    kafka_type = field.metadata["kafka_type"]
    if "tuple" in str(field.type):
        item = uuid.UUID(int=7) if kafka_type == "uuid" else 5
        return (item, item)
    return {"string": "x", "uuid": uuid.UUID(int=9), "bool": True}.get(kafka_type, 3)


def _partition(**changes: object) -> PartitionRecordV2:
    base = dict(partition_id=1, topic_id=uuid.UUID(int=1), replicas=(1, 2, 3), isr=(1, 2), removing_replicas=(),
                adding_replicas=(), leader=1, leader_epoch=0, partition_epoch=0,
                directories=(uuid.UUID(int=5), None, uuid.UUID(int=6)))
    return PartitionRecordV2(**{**base, **changes})


@pytest.mark.parametrize("size", [0, 1, 126, 127, 128, 200, 20000])
def test_long_arrays_use_multi_byte_lengths(size: int) -> None:
    replicas = tuple(range(size))
    dirs = tuple(uuid.UUID(int=i + 1) for i in range(size))
    for record in (_partition(replicas=replicas), _partition(directories=dirs, isr=replicas),
                   _partition(eligible_leader_replicas=replicas, last_known_elr=replicas),
                   PartitionChangeRecordV2(partition_id=0, topic_id=None, isr=replicas, directories=dirs)):
        assert fast_encode.encode(record) == encode_entity(record)
        assert decode_metadata_value(encode_metadata_value(record)) == record


@pytest.mark.parametrize("size", [0, 125, 126, 127, 128, 5000])
def test_long_strings_use_multi_byte_lengths(size: int) -> None:
    text = "é" * (size // 2) + "a" * (size % 2)  # multi-byte UTF-8: the length counts bytes
    for record in (ConfigRecordV0(resource_type=2, resource_name=text, name="a" * size, value=text),
                   ConfigRecordV0(resource_type=2, resource_name="", name=text, value=None)):
        assert fast_encode.encode(record) == encode_entity(record)
        assert decode_metadata_value(encode_metadata_value(record)) == record


def test_nested_entities_and_null_arrays() -> None:
    endpoint = RegisterBrokerRecordV4BrokerEndpoint(name="PLAINTEXT", host="h" * 130, port=9092, security_protocol=0)
    record = RegisterBrokerRecordV4(broker_id=1, is_migrating_zk_broker=False, incarnation_id=None, broker_epoch=5,
                                    end_points=(endpoint,) * 3, features=(), rack=None, fenced=True,
                                    in_controlled_shutdown=False, log_dirs=(None, uuid.UUID(int=3)),
                                    cordoned_log_dirs=())
    assert fast_encode.encode(record) == encode_entity(record)
    # a null array where the schema has none: kio writes length 0, and so do we
    odd = _partition(removing_replicas=None, directories=None)
    assert fast_encode.encode(odd) == encode_entity(odd)


@pytest.mark.parametrize("changes", [
    {"partition_id": 2**40}, {"leader": -(2**31) - 1}, {"replicas": (1, 2**31)}, {"isr": (2**40,) * 200},
    {"leader_recovery_state": 128}, {"eligible_leader_replicas": (2**33,)}, {"leader_epoch": 1.5},
])
def test_out_of_range_numbers_raise_as_kio_does(changes: dict) -> None:
    record = _partition(**changes)
    with pytest.raises(struct.error):
        encode_entity(record)
    with pytest.raises(struct.error):
        fast_encode.encode(record)
    with pytest.raises(struct.error):
        encode_metadata_value(record)


def test_none_in_a_non_nullable_string_raises_type_error() -> None:
    record = ConfigRecordV0(resource_type=2, resource_name=None, name="n", value=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        encode_entity(record)
    with pytest.raises(TypeError):
        fast_encode.encode(record)


def test_unknown_tagged_fields_keep_their_path() -> None:
    # a PartitionRecord v2 with an extra tag 9 (a newer Kafka's) re-encodes with it kept
    plain = encode_metadata_value(_partition())
    assert plain[-1] == 0  # no tagged fields
    extra = plain[:-1] + bytes([1, 9, 2, 0xAB, 0xCD])
    record = decode_metadata_value(extra)
    assert isinstance(record, MetadataRecord) and record.unknown_tagged_fields
    assert encode_metadata_value(record) == extra


def _record_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob("*") if p.suffix in (".log", ".checkpoint"))


@pytest.mark.parametrize("path", corpus_params(_record_files()),
                         ids=lambda p: str(p.relative_to(CORPUS)) if p is not None else "no-corpus")
def test_corpus_records_re_encode_byte_identically(corpus: Path, path: Path) -> None:
    records = 0
    for _, batch in read_batches(path):
        if batch.is_control:
            continue
        for entry in batch.records:
            decoded = decode_record(entry.key, entry.value, False)
            assert not isinstance(decoded, UnknownRecord), decoded
            assert encode_record(decoded) == (None, entry.value)
            if not decoded.unknown_tagged_fields:
                assert _HEADER_OF[(decoded.api_key, decoded.version)] + fast_encode.encode(decoded) == entry.value
            records += 1
    assert records > 0 or "bootstrap" in path.name or path.suffix == ".checkpoint"


def test_mixed_batch_matches_kio() -> None:
    data = st.lists(st.sampled_from(RECORD_KEYS).flatmap(lambda k: record_strategy(RECORD_CLASSES[k])), max_size=30)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(data)
    def check(records: list) -> None:
        for record in records:
            assert encode_metadata_value(record) == _HEADER_OF[(record.api_key, record.version)] + encode_entity(record)

    check()
