"""kraftd dump-log says a file's damage in words on stderr, as metashell does (log_reader.in_words),
the raw reason kept in parentheses; stdout stays what Kafka's kafka-dump-log prints (compared live
in test_kafka_dump_log_damage)."""

from __future__ import annotations

import contextlib
import io
import struct
from pathlib import Path

from engine.tools.cli import run


def _dump(path: Path) -> tuple[int, str, list[str]]:
    stdout, errors = io.StringIO(), []
    with contextlib.redirect_stdout(stdout):
        code = run(["dump-log", str(path)], err=errors.append)
    return code, stdout.getvalue(), errors


def test_garbage_is_said_in_words(tmp_path: Path) -> None:
    garbage = tmp_path / "00000000000000000000.log"
    garbage.write_bytes(b"\xa8\xf6\x42\x31" * 500)
    claimed = struct.unpack(">i", garbage.read_bytes()[8:12])[0]
    code, stdout, errors = _dump(garbage)
    assert code == 1 and errors == [
        f"kraftd: {garbage}, byte offset 0: the record batch there claims a length of {claimed} bytes, which no "
        f"batch has: the file is not Kafka record batches, or is damaged (absurd batch length {claimed})"]
    assert stdout == f"Dumping {garbage}\nLog starting offset: 0\n"  # Kafka's banner, before the damage
