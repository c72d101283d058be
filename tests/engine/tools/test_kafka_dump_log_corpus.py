"""``kraftd dump-log`` against Kafka's own ``kafka-dump-log``, byte for byte, on every file of the
real corpus (tests/corpus_files.py: segments, snapshots and bootstrap snapshots written by Kafka
3.3 to 4.x and Confluent builds), for each tested Kafka version and each way of printing both
tools share (test_kafka_dump_log.MODES).

The history's comparison (test_kafka_dump_log.py) covers what our controller and Kafka's write
today; this one covers what real clusters wrote over the years: older record versions, Confluent's
builds, snapshots of Kafka 3.5, logs of 3.3. Kafka's output is the expected text with the same
single normalisation between Kafka's own releases (``kafka_lines``); every line of every file
must be the same characters.

Cost: one kafka-dump-log JVM per version and mode over every file at once (``--files a,b,c``);
ours runs in this process, per file.
"""

from __future__ import annotations

import contextlib
import hashlib
import io

import pytest

from engine.tools.cli import run
from test_kafka_dump_log import MODES, differences, kafka_lines, split_by_file
from tests.conftest import corpus_unavailable
from tests.corpus_files import label, record_files

pytestmark = [pytest.mark.kafka, pytest.mark.corpus]

FILES = record_files()
_KAFKA: dict[tuple[str, str], dict[str, list[str]]] = {}
_OURS_DIGEST: dict[tuple[str, str], str] = {}  # (mode, file): our dump's digest, once it matched a Kafka's


def kafka_dump(dist, mode: str) -> dict[str, list[str]]:
    """kafka-dump-log over every corpus file: one JVM per version and mode, kept for the session."""
    key = (dist.version, mode)
    if key not in _KAFKA:
        files = [str(p) for p in FILES]
        assert not any("," in f for f in files), "--files splits at commas"
        done = dist.run("kafka-dump-log", *MODES[mode][0], "--files", ",".join(files), timeout_s=900)
        _KAFKA[key] = split_by_file(kafka_lines(dist, mode, done.stdout))
        assert sorted(_KAFKA[key]) == sorted(files), "kafka-dump-log did not dump every file given"
    return _KAFKA[key]


def digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def our_dump(mode: str, path) -> dict[str, list[str]]:
    stdout, errors = io.StringIO(), []
    with contextlib.redirect_stdout(stdout):
        code = run(["dump-log", *MODES[mode][1], str(path)], err=errors.append)
    assert (code, errors) == (0, []), f"kraftd dump-log failed on {label(path)}: {errors}"
    return split_by_file(stdout.getvalue())


@pytest.fixture
def corpus_files():
    """Every corpus file; the module's ``corpus`` marker skips (fails under CI) without a corpus."""
    if not FILES:
        corpus_unavailable("the Kafka corpus holds no segment or snapshot")
    return FILES


@pytest.mark.parametrize("mode", MODES)
def test_kraftd_dumps_every_corpus_file_as_kafka_does(kafka_dist, corpus_files, mode) -> None:
    expected = kafka_dump(kafka_dist, mode)
    problems, lines = [], 0
    for path in corpus_files:
        want = expected[str(path)]
        lines += len(want)
        if _OURS_DIGEST.get((mode, str(path))) == digest(want):
            continue  # ours is what the other version printed, byte for byte, and this one prints the same
        ours = our_dump(mode, path)
        found = differences({str(path): want}, ours)
        problems += found
        if not found:
            _OURS_DIGEST[(mode, str(path))] = digest(want)
    assert not problems, (f"Kafka {kafka_dist.version}, {mode}: {len(problems)} of {len(corpus_files)} files "
                          f"differ\n" + "\n".join(problems))
    # not vacuous: every file dumped with its batches and records
    assert all(any(line.startswith("baseOffset: ") for line in expected[str(p)]) for p in corpus_files)
    assert lines > 10 * len(corpus_files)


def test_a_changed_character_is_a_difference(corpus_files) -> None:
    """The comparison itself (no Kafka needed): one character changed in one record line of our
    dump is one difference, naming the file and the line."""
    path = max(corpus_files, key=lambda p: p.stat().st_size)
    ours = our_dump("decoder", path)
    changed = {k: list(v) for k, v in ours.items()}
    index = next(i for i, line in enumerate(changed[str(path)]) if line.startswith("| offset: "))
    changed[str(path)][index] = changed[str(path)][index].replace("offset: ", "offset:  ", 1)
    problems = differences(ours, changed)
    assert len(problems) == 1 and problems[0].startswith(f"{path} line {index + 2}:"), problems
    assert differences(ours, {f"{path}x": ours[str(path)]}) != []
