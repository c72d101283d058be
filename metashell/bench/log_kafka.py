"""The same question as ``log /configs/TOPIC/X/retention.ms``, asked with Apache Kafka's own tools.

Kafka has no history command: an operator with only its tools dumps the archive's segments with
``kafka-dump-log --cluster-metadata-decoder`` and greps the CONFIG_RECORDs of that topic and key.
That is the yardstick ``metashell bench log --kafka-libs DIR`` times beside ``log``, in the same
run: a whole process (the JVM's start included, as ``log`` cold includes the shell's), its output
filtered by grep, and the matching lines counted so the two answers can be held side by side (grep
gets only the new values, not old -> new, nor a deleted topic's configs going with it).
"""

from __future__ import annotations

import shlex
import subprocess
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from engine.bench.peer import LOG4J2_TOOLS, KafkaTools, kafka_tools
from engine.common.errors import ConfigError
from engine.storage.log_reader import list_log_dir, resolve_metadata_dir

DUMP_HEAP = "1G"


class KafkaAnswer(NamedTuple):
    version: str
    seconds: float
    lines: int  # the CONFIG_RECORD lines grep kept


def kafka_config_history(libs: Path, archive: Path, topic: str, key: str) -> KafkaAnswer:
    """``kafka-dump-log --cluster-metadata-decoder --files SEGMENTS | grep -c`` for one topic's key."""
    tools: KafkaTools = kafka_tools(libs)
    segments = [str(path) for _, path in list_log_dir(resolve_metadata_dir(archive)).segments]
    if not segments:
        raise ConfigError(f"{archive}: no segments to dump")
    needle = f'"resourceType":2,"resourceName":"{topic}","name":"{key}"'
    with tempfile.TemporaryDirectory(prefix="metashell-bench-log-kafka-") as tmp:
        log4j = Path(tmp) / "tools-log4j2.properties"
        log4j.write_text(LOG4J2_TOOLS)
        dump = tools.command(tools.dump_main, DUMP_HEAP, log4j, "--cluster-metadata-decoder",
                             "--files", ",".join(segments))
        script = f"{shlex.join(dump)} 2>/dev/null | grep -cF {shlex.quote(needle)}"
        started = time.perf_counter()
        done = subprocess.run(["sh", "-c", script], stdin=subprocess.DEVNULL, capture_output=True, text=True)
        seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):  # grep: 1 is "no line matched", a count of 0
        raise ConfigError(f"Kafka {tools.version}'s dump of {archive} failed: {done.stderr.strip() or done.returncode}")
    return KafkaAnswer(tools.version, seconds, int(done.stdout.strip() or 0))
