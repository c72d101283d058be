"""metashell's ``/image`` against Kafka's own ``kafka-metadata-shell``, byte for byte, on every file
of the real corpus (tests/corpus_files.py: segments, snapshots and bootstrap snapshots written by
Kafka 3.3 to 4.x and Confluent builds), for Kafka 4.1.2 and the newest release.

Each file is opened as Kafka's shell opens it (``--snapshot FILE``, a segment too) by both
shells, and walked by Kafka's own listing (tests/kafka_shell_compare.py): the provenance, ``ls``
of every directory down to the second level, ``find`` and ``tree`` of everything below. The
newest release's answers must be ours character for character; 4.1.2's too, but for what
that release prints otherwise (kafka_shell_compare.expected_of_older), exactly.

Cost: one Kafka JVM per file and version, two at a time, for the whole module (``_TRANSCRIPTS``).
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from engine.cluster.kafka_dist import version_key
from engine.storage.log_reader import read_batch_headers
from metashell.source import Source
from tests.conftest import corpus_params, corpus_unavailable
from tests.corpus_files import label, record_files
from tests.kafka_shell_compare import OLDER_SHELL, Answers, Comparison, compare, kafka_transcript, our_transcript

pytestmark = [pytest.mark.kafka, pytest.mark.corpus]


def _has_data(path: Path) -> bool:
    """Kafka's shell waits for a data batch before it answers: a file of control batches only
    (an empty segment) would leave it loading. A file whose headers do not read is kept: its
    own test then says what is wrong with it, rather than the collection of every test failing."""
    try:
        return any(not header.is_control for _, header in read_batch_headers(path))
    except Exception:  # noqa: BLE001 - reported by the file's own test
        return True


FILES = [p for p in record_files() if _has_data(p)]
_TRANSCRIPTS: dict[str, dict[Path, Answers | BaseException]] = {}
_COMPARED: dict[tuple[str, Path], Comparison] = {}


def kafka_transcripts(dist, scratch: Path) -> dict[Path, Answers | BaseException]:
    """Kafka's shell on every corpus file, two JVMs at a time (CI has two cores), once per version."""
    if dist.version not in _TRANSCRIPTS:
        def one(index: int) -> Answers | BaseException:
            try:
                return kafka_transcript(dist, FILES[index], scratch / f"file-{index}")
            except Exception as exc:  # noqa: BLE001 - that file's test reports it
                return exc
        with ThreadPoolExecutor(max_workers=2) as pool:
            _TRANSCRIPTS[dist.version] = dict(zip(FILES, pool.map(one, range(len(FILES)))))
    return _TRANSCRIPTS[dist.version]


def compared(dist, path: Path, tmp_path_factory) -> Comparison:
    key = (dist.version, path)
    if key not in _COMPARED:
        kafka = kafka_transcripts(dist, tmp_path_factory.mktemp(f"kafka-shell-corpus-{dist.version}"))[path]
        if isinstance(kafka, BaseException):
            raise AssertionError(f"kafka-metadata-shell {dist.version} on {label(path)} failed: {kafka}") from kafka
        older = version_key(dist.version) < OLDER_SHELL
        ours, quota_names = our_transcript(Source(snapshot=path), list(kafka), older)
        _COMPARED[key] = compare(label(path), kafka, ours, quota_names, older)
    return _COMPARED[key]


@pytest.mark.parametrize("path", corpus_params(FILES), ids=label)
def test_image_prints_what_kafkas_shell_prints(kafka_dist, path: Path, tmp_path_factory) -> None:
    comparison = compared(kafka_dist, path, tmp_path_factory)
    assert not comparison.differences, (f"{len(comparison.differences)} answers differ from kafka-metadata-shell "
                                        f"{kafka_dist.version}:\n" + "\n".join(comparison.differences[:40]))
    assert comparison.compared["command"] >= 20  # the provenance, ls /image and its ten directories, ...


def test_the_corpus_comparison_covered_every_kind_of_leaf(kafka_dist, tmp_path_factory) -> None:
    """The negative control: a walk that compared little would pass; this one must have compared
    every file, with brokers, controllers, partitions, configs and metadata versions in them."""
    if not FILES:
        corpus_unavailable("the Kafka corpus holds no file with a data batch")
    total = sum((compared(kafka_dist, p, tmp_path_factory).compared for p in FILES), Counter())
    assert total["command"] >= 20 * len(FILES)
    for kind in ("broker", "controller", "partition", "config", "metadata version"):
        assert total[kind] > 0, f"no {kind} leaf compared over the corpus: {dict(total)}"
    assert total["line"] > 100 * len({p.parent.parent for p in FILES})
