"""What Kafka 4.3 and 4.4 write: the new record versions, and tagged fields we do not know.

The record values below are bytes written by Apache Kafka 4.4.0's own MetadataRecordSerde
(kafka-metadata 4.4.0), kept here as hex: RegisterBrokerRecord v4 and
BrokerRegistrationChangeRecord v3 with cordoned log directories (KIP-1066, 4.3),
UnregisterControllerRecord (4.4), and records carrying tagged fields their schema does not
define — added through Kafka's own raw-tagged-field API, as a newer Kafka would write
them. Each must decode with its known fields, show, replay and re-encode byte for byte.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.image.image_writer import image_records
from engine.image.metadata_delta import MetadataDelta, replay_entries
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import SnapshotFooterRecord, VotersRecord, i16, i32, i64, u16
from engine.records.metadata_record_serde import (ControlRecord, UnknownRecord, control_record, decode_control,
                                                  decode_metadata_value, encode_control, encode_metadata_value,
                                                  encode_record)
from engine.records.record_batch import build_batch, encode_batch
from engine.records.record_json import control_payload, record_to_json
from engine.records.tagged_fields import UnknownTaggedField, decode_keeping_unknown, encode_with_unknown
from engine.storage.log_reader import read_file
from engine.tools.cli import run
from metashell.tree.nodes import resolve
from metashell.tree.root import build_tree
from tests.strategies import record_strategy

# RegisterBrokerRecord v4: broker 3, epoch 42, PLAINTEXT localhost:9092, metadata.version 7..30,
# log dirs D1 and D2 (tag 0), cordoned D2 (tag 1)
RBR_V4 = ("010004000000030000000000000000070000000000000009000000000000002a020a504c41494e544558540a6c6f63616c"
          "686f7374238400000002116d657461646174612e76657273696f6e0007001e000000000200210301020304050607081112"
          "13141516171821222324252627283132333435363738011102212223242526272831323334353637"
          "38")
BRC_V3_CORDONED_D1 = "01110300000003000000000000002a0103110201020304050607081112131415161718"
BRC_V3_CORDONED_NONE = "01110300000003000000000000002a01030101"  # an empty list: every dir uncordoned
UNREGISTER_CONTROLLER_3000 = "011d0000000bb800"
# TopicRecord v0 "foo" with unknown tag 7 = 01 02 03
TOPIC_UNKNOWN_7 = "01020004666f6f00000000000000050000000000000006010703010203"
# RegisterBrokerRecord v2 (as above, no log dirs) with unknown tags 5 (ca fe) and 6 (09) on the
# record and tag 2 (55) on its endpoint
RBR_V2_UNKNOWN = ("010002000000030000000000000000070000000000000009000000000000002a020a504c41494e544558540a6c"
                  "6f63616c686f7374238400000102015502116d657461646174612e76657273696f6e0007001e00000000020502"
                  "cafe060109")
# RBR_V4 plus unknown tag 9 (0a 0b), after the known tags 0 and 1
RBR_V4_UNKNOWN_9 = ("010004000000030000000000000000070000000000000009000000000000002a020a504c41494e544558540a6c"
                    "6f63616c686f7374238400000002116d657461646174612e76657273696f6e0007001e000000000300210301"
                    "020304050607081112131415161718212223242526272831323334353637380111022122232425262728313233"
                    "343536373809020a0b")

D1 = uuid.UUID("01020304-0506-0708-1112-131415161718")
D2 = uuid.UUID("21222324-2526-2728-3132-333435363738")


def _decode(hex_value: str):
    value = bytes.fromhex(hex_value)
    record = decode_metadata_value(value)
    assert not isinstance(record, UnknownRecord), record
    assert encode_record(record) == (None, value)  # byte for byte, as Kafka wrote it
    return record


def _payload(record) -> dict:
    return json.loads(record_to_json(record))


def test_register_broker_v4_keeps_cordoned_log_dirs() -> None:
    record = _decode(RBR_V4)
    assert isinstance(record, m.RegisterBrokerRecordV4) and record.unknown_tagged_fields == ()
    assert record.log_dirs == (D1, D2) and record.cordoned_log_dirs == (D2,)
    assert record.end_points[0].port == 9092 and record.rack is None and record.fenced is False
    data = _payload(record)["data"]
    assert data["cordonedLogDirs"] == ["ISIjJCUmJygxMjM0NTY3OA"]  # Kafka's base64 of D2, as its JSON has it
    assert "_unknownTaggedFields" not in data


def test_broker_registration_change_v3_and_unregister_controller() -> None:
    assert _decode(BRC_V3_CORDONED_D1).cordoned_log_dirs == (D1,)
    emptied = _decode(BRC_V3_CORDONED_NONE)
    assert emptied.cordoned_log_dirs == () and _payload(emptied)["data"]["cordonedLogDirs"] == []
    unregister = _decode(UNREGISTER_CONTROLLER_3000)
    assert isinstance(unregister, m.UnregisterControllerRecordV0) and unregister.controller_id == 3000
    assert _payload(unregister) == {"type": "UNREGISTER_CONTROLLER_RECORD", "version": 0,
                                    "data": {"controllerId": 3000}}


def test_unknown_tagged_field_is_kept_shown_and_written_back() -> None:
    record = _decode(TOPIC_UNKNOWN_7)
    assert isinstance(record, m.TopicRecordV0) and record.name == "foo"
    assert record.unknown_tagged_fields == (UnknownTaggedField((), 7, b"\x01\x02\x03"),)
    assert _payload(record)["data"] == {"name": "foo", "topicId": "AAAAAAAAAAUAAAAAAAAABg",
                                        "_unknownTaggedFields": [{"tag": 7, "data": "AQID"}]}


def test_unknown_tags_in_nested_structs_sit_where_they_were() -> None:
    record = _decode(RBR_V2_UNKNOWN)
    assert isinstance(record, m.RegisterBrokerRecordV2) and record.broker_id == 3
    assert set(record.unknown_tagged_fields) == {UnknownTaggedField(("end_points", 0), 2, b"\x55"),
                                                 UnknownTaggedField((), 5, b"\xca\xfe"),
                                                 UnknownTaggedField((), 6, b"\x09")}
    data = _payload(record)["data"]
    assert data["endPoints"][0]["_unknownTaggedFields"] == [{"tag": 2, "data": "VQ=="}]
    assert data["_unknownTaggedFields"] == [{"tag": 5, "data": "yv4="}, {"tag": 6, "data": "CQ=="}]
    assert "_unknownTaggedFields" not in data["features"][0]


def test_unknown_tags_merge_with_known_ones_in_tag_order() -> None:
    record = _decode(RBR_V4_UNKNOWN_9)  # tags 0 and 1 known, 9 not: written back after them
    assert record.cordoned_log_dirs == (D2,)
    assert record.unknown_tagged_fields == (UnknownTaggedField((), 9, b"\x0a\x0b"),)
    assert record == _decode(RBR_V4)  # equal in every known field


def test_a_control_record_keeps_unknown_tags_too() -> None:
    # SnapshotFooterRecord v0: int16 version, then a tag section of one unknown tag 4 = ab cd
    value = bytes.fromhex("0000" + "01" + "0402abcd")
    key, _ = encode_control(control_record(SnapshotFooterRecord(version=i16(0))))
    record = decode_control(key, value)
    assert isinstance(record, ControlRecord)
    assert record.unknown_tagged_fields == (UnknownTaggedField((), 4, b"\xab\xcd"),)
    assert encode_control(record) == (key, value)
    assert control_payload(record) == 'SnapshotFooter {"version":0,"_unknownTaggedFields":[{"tag":4,"data":"q80="}]}'


def test_unknown_tags_deep_in_a_control_message_round_trip() -> None:
    from engine.records.kio_codec import KRaftVersionFeature, VotersEndpoint, VotersVoter

    voters = VotersRecord(version=i16(0), voters=(VotersVoter(
        voter_id=i32(1), voter_directory_id=D1,
        endpoints=(VotersEndpoint(name="CONTROLLER", host="h", port=u16(9093)),),
        k_raft_version_feature=KRaftVersionFeature(min_supported_version=i16(0), max_supported_version=i16(1))),))
    unknown = (UnknownTaggedField(("voters", 0, "endpoints", 0), 3, b"xyz"),
               UnknownTaggedField(("voters", 0, "k_raft_version_feature"), 0, b""),
               UnknownTaggedField((), 1, b"\x00\x01"))
    value = encode_with_unknown(voters, unknown)
    decoded, used, found = decode_keeping_unknown(VotersRecord, value)
    assert decoded == voters and used == len(value) and set(found) == set(unknown)
    assert encode_with_unknown(decoded, found) == value


@pytest.mark.parametrize("key", sorted(m.RECORD_CLASSES), ids=lambda k: f"{m.RECORD_CLASSES[k].__name__}")
def test_every_record_version_keeps_unknown_tags_beside_its_own(key) -> None:
    cls = m.RECORD_CLASSES[key]
    known = {f.metadata["tag"] for f in dataclasses.fields(cls) if "tag" in f.metadata}
    free_tags = st.integers(0, 300).filter(lambda tag: tag not in known)

    @settings(max_examples=15, deadline=None)
    @given(record_strategy(cls), st.dictionaries(free_tags, st.binary(max_size=20), min_size=1, max_size=3))
    def check(record, extra):
        unknown = tuple(UnknownTaggedField((), tag, data) for tag, data in sorted(extra.items()))
        value = encode_metadata_value(record)[:3] + encode_with_unknown(record, unknown)
        decoded = decode_metadata_value(value)
        assert decoded == record and decoded.unknown_tagged_fields == unknown
        assert encode_metadata_value(decoded) == value
        data = _payload(decoded)["data"]
        assert list(data)[-1] == "_unknownTaggedFields"  # after the known fields
        assert data["_unknownTaggedFields"] == [{"tag": tag, "data": base64.b64encode(value).decode()}
                                                for tag, value in sorted(extra.items())]

    check()


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_an_unknown_tag_cut_short_is_kept_raw(cut: int) -> None:
    value = bytes.fromhex(TOPIC_UNKNOWN_7)[:-cut]
    record = decode_metadata_value(value)
    assert isinstance(record, UnknownRecord) and record.value == value and record.api_key == 2


def _write_segment(directory: Path, values: list[str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / SEGMENT
    batch = build_batch(0, [(None, bytes.fromhex(v)) for v in values], timestamp_ms=1_700_000_000_000,
                        leader_epoch=1)
    path.write_bytes(encode_batch(batch))
    return path


SEGMENT = "00000000000000000000.log"
_LOG = [RBR_V2_UNKNOWN, RBR_V4, BRC_V3_CORDONED_D1, TOPIC_UNKNOWN_7]


def test_dump_log_shows_new_fields_and_unknown_tags(tmp_path: Path, capsys) -> None:
    path = _write_segment(tmp_path / "__cluster_metadata-0", _LOG)
    capsys.readouterr()
    errors: list[str] = []
    assert run(["dump-log", str(path)], err=errors.append) == 0 and errors == []  # nothing shown raw
    payloads = [line.split(" payload: ", 1)[1] for line in capsys.readouterr().out.splitlines()
                if " payload: " in line]
    assert len(payloads) == 4
    assert '"endPoints":[{"name":"PLAINTEXT","host":"localhost","port":9092,"securityProtocol":0,' \
           '"_unknownTaggedFields":[{"tag":2,"data":"VQ=="}]}]' in payloads[0]
    assert payloads[0].endswith(',"_unknownTaggedFields":[{"tag":5,"data":"yv4="},{"tag":6,"data":"CQ=="}]}}')
    assert '"cordonedLogDirs":["ISIjJCUmJygxMjM0NTY3OA"]' in payloads[1]
    assert payloads[2] == ('{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":3,"data":{"brokerId":3,'
                           '"brokerEpoch":42,"cordonedLogDirs":["AQIDBAUGBwgREhMUFRYXGA"]}}')
    assert payloads[3].endswith('"_unknownTaggedFields":[{"tag":7,"data":"AQID"}]}}')
    assert base64.b64decode("AQID") == b"\x01\x02\x03"


def test_replay_keeps_cordoned_dirs_and_the_records_with_unknown_tags(tmp_path: Path) -> None:
    path = _write_segment(tmp_path / "__cluster_metadata-0", _LOG)
    entries = list(read_file(path))
    assert [type(e.record) for e in entries] == [m.RegisterBrokerRecordV2, m.RegisterBrokerRecordV4,
                                                m.BrokerRegistrationChangeRecordV3, m.TopicRecordV0]
    assert entries[0].record.unknown_tagged_fields and entries[3].record.unknown_tagged_fields
    image = replay_entries(entries)
    broker = image.cluster.brokers[3]
    assert broker.cordoned_directories == (D1,)  # v4 registered D2; the change record replaced it
    assert broker.directories == (D1, D2) and image.topics.topic("foo") is not None

    delta = MetadataDelta(image)  # a null list changes nothing, an empty one uncordons all
    delta.replay(m.BrokerRegistrationChangeRecordV3(broker_id=i32(3), broker_epoch=i64(42)))
    assert delta.apply().cluster.brokers[3].cordoned_directories == (D1,)
    delta.replay(_decode(BRC_V3_CORDONED_NONE))
    assert delta.apply().cluster.brokers[3].cordoned_directories == ()

    earlier = replay_entries(entries[:1])  # registered by a v2 record: nothing said of cordoning
    assert earlier.cluster.brokers[3].cordoned_directories is None


def test_the_image_writes_cordoned_dirs_back_and_shows_them(tmp_path: Path) -> None:
    image = replay_entries(list(read_file(_write_segment(tmp_path / "__cluster_metadata-0", _LOG))))
    records = list(image_records(image))
    broker_records = [r for r in records if r.record_name == "RegisterBrokerRecord"]
    assert [type(r) for r in broker_records] == [m.RegisterBrokerRecordV4]  # kept at any metadata.version
    assert broker_records[0].cordoned_log_dirs == (D1,)
    again = MetadataDelta(MetadataImage())
    for record in records:
        again.replay(record)
    assert again.apply().cluster == image.cluster
    shown = resolve(build_tree(image), "/image/cluster/brokers/3").value()
    assert shown["cordoned_directories"] == ["AQIDBAUGBwgREhMUFRYXGA"]

    # from metadata.version 4.3-IV0 (level 30) on, Kafka writes v4 even with nothing cordoned
    delta = MetadataDelta(replay_entries(list(read_file(tmp_path / "__cluster_metadata-0" / SEGMENT))[:1]))
    delta.replay(m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(30)))
    written = [r for r in image_records(delta.apply()) if r.record_name == "RegisterBrokerRecord"]
    assert [type(r) for r in written] == [m.RegisterBrokerRecordV4] and written[0].cordoned_log_dirs is None


def test_unregister_controller_removes_the_registration() -> None:
    delta = MetadataDelta(MetadataImage())
    delta.replay(m.RegisterControllerRecordV0(
        controller_id=i32(3000), incarnation_id=D1, zk_migration_ready=False,
        end_points=(m.RegisterControllerRecordV0ControllerEndpoint(name="CONTROLLER", host="h", port=u16(9093),
                                                                   security_protocol=i16(0)),), features=()))
    image = delta.apply()
    assert 3000 in image.cluster.controllers
    delta = MetadataDelta(image)
    delta.replay(_decode(UNREGISTER_CONTROLLER_3000))
    assert 3000 not in delta.apply().cluster.controllers
