"""``kraftd dump-log`` on damaged segments against Kafka's own ``kafka-dump-log``, run live on the
same files, for each tested Kafka version.

Kafka's tool meets damage in a segment in three ways, and ours prints the same stdout for each:

* a batch failing its CRC (one byte flipped inside it) is printed with ``isvalid: false``, its
  records decoded, and the dump goes on to the batches after it;
* a batch whose length runs past the end of the file ends the file with
  ``Found N invalid bytes at the end of NAME``;
* a batch whose records do not parse: its batch line, then Kafka's tool fails (a stack trace).

Where Kafka's tool exits 0 (the first two), ours exits 1 with one line on stderr naming the file,
the byte offset and the damage: a script learns of it without grepping stdout. Where Kafka's tool
fails, ours does too, in one line.
"""

from __future__ import annotations

import contextlib
import io
import struct
from pathlib import Path

import pytest

from engine.storage.log_reader import read_batches
from engine.tools.cli import run
from kafka_peer.distribution import KafkaDistribution
from metashell.demo.shell_demo import write_demo_log_dir

pytestmark = pytest.mark.kafka

SEGMENT = "00000000000000000000.log"


def damaged_segments(root: Path) -> dict[str, Path]:
    """The demo log's segment, damaged in each way, each in a directory of its own."""
    source = write_demo_log_dir(root / "demo") / "__cluster_metadata-0" / SEGMENT
    data = source.read_bytes()
    batches = [(pos, batch.size_bytes) for pos, batch in read_batches(source)]
    middle, size = batches[len(batches) // 2 - 1]
    flipped = bytearray(data)
    flipped[middle + size - 3] ^= 0xFF  # inside the last record's value: it still parses
    too_long = bytearray(data)
    too_long[middle + 8:middle + 12] = struct.pack(">i", 0x7FFFFF00)
    unparsable = bytearray(data)
    unparsable[middle + 61] = 0x7F  # the first record's length varint
    cases = {"crc": flipped, "too-long": too_long, "records": unparsable}
    paths = {}
    for name, content in cases.items():
        path = root / name / SEGMENT
        path.parent.mkdir()
        path.write_bytes(bytes(content))
        paths[name] = path
    return paths


def ours(path: Path) -> tuple[int, str, list[str]]:
    stdout, errors = io.StringIO(), []
    with contextlib.redirect_stdout(stdout):
        code = run(["dump-log", str(path)], err=errors.append)
    return code, stdout.getvalue(), errors


@pytest.mark.parametrize("case", ["crc", "too-long", "records"])
def test_damage_is_dumped_as_kafka_dumps_it(kafka_dist: KafkaDistribution, tmp_path: Path, case: str) -> None:
    path = damaged_segments(tmp_path)[case]
    kafka = kafka_dist.run("kafka-dump-log", "--cluster-metadata-decoder", "--files", str(path), check=False)
    code, stdout, errors = ours(path)
    assert stdout == kafka.stdout
    assert kafka.returncode == (1 if case == "records" else 0), kafka.stderr[-2000:]
    assert code == 1 and len(errors) == 1 and f"{path}, byte offset " in errors[0], errors
    if case == "crc":
        assert "isvalid: false" in stdout and "CRC mismatch" in errors[0]
    elif case == "too-long":
        assert f"invalid bytes at the end of {SEGMENT}" in stdout
    else:
        assert "records do not parse" in errors[0]
