"""The bounds walk that stands between untrusted bytes and kio's native reader.

kio sizes an array by its declared count before reading it; a count in the billions makes the
allocation fail and the process abort. These tests feed such counts through every door — the
serde API, the replay hot path, dump-log — in a subprocess, so a regression shows as a failed
assertion instead of killing the test run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings

from engine.records.bounds_check import checker_for, fits
from engine.records.kio_codec import LeaderChangeMessage, VotersRecord, encode_unsigned_varint
from engine.records.metadata_record_serde import encode_metadata_value
from engine.records.metadata_records import RECORD_CLASSES, ClientQuotaRecordV0, NoOpRecordV0, PartitionRecordV2
from tests.strategies import record_strategy

HUGE = 30_000_000_000  # x 8 bytes: far past any machine's memory


def _huge_count() -> bytes:
    return encode_unsigned_varint(HUGE + 1)


def _poison_values() -> dict[str, bytes]:
    """Metadata record values whose first array declares ~30 billion elements."""
    partition = bytes([1, 3, 2]) + bytes(20) + _huge_count() + bytes(40)  # PartitionRecord v2 replicas
    quota = bytes([1, 14, 0]) + _huge_count() + bytes(40)  # ClientQuotaRecord entity array of structs
    tagged = bytes([1, 5, 2]) + bytes(20) + b"\x01" + b"\x06\x06" + _huge_count() + b"\x00"  # PCR ELR tag
    return {"int32-array": partition, "struct-array": quota, "tagged-array": tagged}


@pytest.mark.parametrize("name", sorted(_poison_values()))
def test_absurd_array_count_is_refused_not_fatal(name: str) -> None:
    value = _poison_values()[name]
    script = textwrap.dedent(f"""
        from engine.records.metadata_record_serde import decode_metadata_value, UnknownRecord
        record = decode_metadata_value({value!r})
        assert isinstance(record, UnknownRecord), record
        print("kept:", record.reason)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "kept:" in proc.stdout


def test_absurd_count_in_a_crc_valid_segment_survives_replay_and_dump(tmp_path: Path) -> None:
    """The replay hot path and dump-log read a valid-CRC batch holding the poison records."""
    from engine.records.record_batch import build_batch, encode_batch

    values = [encode_metadata_value(NoOpRecordV0())] + list(_poison_values().values())
    segment = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    segment.parent.mkdir()
    segment.write_bytes(encode_batch(build_batch(0, [(None, v) for v in values], timestamp_ms=1, leader_epoch=1)))
    script = textwrap.dedent(f"""
        from pathlib import Path
        from engine.storage.log_reader import read_log_dir
        types = [e.record.type_name for e in read_log_dir(Path({str(tmp_path)!r}))]
        print(types)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "NO_OP_RECORD" in proc.stdout and proc.stdout.count("RECORD") == 4
    dump = subprocess.run([sys.executable, "-m", "engine.tools.cli", "dump-log", str(segment)],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    # every record is shown; the run ends in one line naming the first one shown raw
    assert dump.stdout.count('"error":"undecodable') == 3
    assert dump.returncode == 1 and dump.stderr.count("\n") == 1, dump.stderr[-2000:]
    assert "byte offset 0: record at offset 1 shown raw" in dump.stderr and "2 more" in dump.stderr


def test_control_records_are_walked_too() -> None:
    script = textwrap.dedent(f"""
        import struct
        from engine.records.metadata_record_serde import decode_control, UnknownRecord
        key = struct.pack(">hh", 0, 6)  # KRAFT_VOTERS
        record = decode_control(key, b"\\x00\\x00" + {_huge_count()!r} + bytes(30))
        assert isinstance(record, UnknownRecord), record
        print("kept")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "kept" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.parametrize("key", sorted(RECORD_CLASSES), ids=lambda k: f"{RECORD_CLASSES[k].__name__}")
def test_walk_agrees_with_the_encoder_on_valid_messages(key) -> None:
    cls = RECORD_CLASSES[key]

    @settings(max_examples=40, deadline=None)
    @given(record_strategy(cls))
    def check(message) -> None:
        value = encode_metadata_value(message)
        assert fits(cls, value, 3, len(value))
        walker = checker_for(cls)
        if walker is not None:
            assert walker(value, 3, len(value)) == len(value)
            assert not fits(cls, value[:-1], 3, len(value) - 1) or len(value) == 3

    check()


@pytest.mark.parametrize("cls", [LeaderChangeMessage, VotersRecord])
def test_walk_handles_kio_control_classes(cls) -> None:
    from engine.records.kio_codec import encode_entity

    @settings(max_examples=40, deadline=None)
    @given(record_strategy(cls))
    def check(message) -> None:
        data = encode_entity(message)
        assert checker_for(cls)(data, 0, len(data)) == len(data)

    check()


def test_classes_without_arrays_need_no_walk() -> None:
    assert checker_for(NoOpRecordV0) is None
    assert checker_for(PartitionRecordV2) is not None and checker_for(ClientQuotaRecordV0) is not None
