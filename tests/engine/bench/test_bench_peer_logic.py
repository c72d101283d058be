"""The pieces of ``kraftd bench peer`` that decide what it prints: the snapshot's layout, the
judges of the shells' answers, the shell driver's re-asking, and the ratios. No timing is asserted."""

from __future__ import annotations

import math
import sys
import textwrap

import pytest

from engine.bench.peer_files import APPEND_RECORDS, Manifest, Probe, bench_files, write_kafka4_snapshot
from engine.bench.peer_report import Figure, cell, ratio, table
from engine.bench.peer_shells import (PeerError, Question, expected_find, judge_cat, judge_find, judge_ls,
                                      questions, run_session)
from engine.records.record_batch import encode_entries
from engine.storage.log_reader import read_batches


def _manifest() -> Manifest:
    probe = Probe("b", 1, [2, 3, 1], ["AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg", "AAAAAAAAAAAAAAAAAAAAAw"],
                  2, 5, 7)
    return Manifest({"a": 1, "b": 2}, probe, 6)


def test_data_batches_are_cut_as_kafka_cuts_them(tmp_path):
    """Appends of 1,024 records, gathered into batches no larger than the limit: a batch is closed
    only when the next append would not fit in it."""
    (tmp_path / "whole").mkdir()
    whole, _ = write_kafka4_snapshot(tmp_path / "whole", 5_000)
    first = [(r.key, r.value) for _, b in read_batches(whole) if not b.is_control for r in b.records]
    # one byte short of three appends: the batch must close after two
    limit = len(encode_entries(0, first[:3 * APPEND_RECORDS], epoch=1, timestamp_ms=0, control=False)) - 1
    path, manifest = write_kafka4_snapshot(tmp_path, 5_000, max_batch_bytes=limit)
    batches = [batch for _, batch in read_batches(path)]
    data = [b for b in batches if not b.is_control]
    counts = [len(b.records) for b in data]
    assert [b.is_control for b in batches] == [True] + [False] * len(data) + [True]
    assert len(data) >= 2 and sum(counts) == manifest.records
    assert counts[0] == 2 * APPEND_RECORDS and all(count % APPEND_RECORDS == 0 for count in counts[:-1])
    for batch, after in zip(data, data[1:]):
        entries = [(r.key, r.value) for r in batch.records]
        following = [(r.key, r.value) for r in after.records[:APPEND_RECORDS]]
        assert len(encode_entries(0, entries, epoch=1, timestamp_ms=0, control=False)) == batch.size_bytes <= limit
        assert len(encode_entries(0, entries + following, epoch=1, timestamp_ms=0, control=False)) > limit


def test_the_manifest_is_what_was_written(tmp_path):
    files = bench_files(tmp_path, 250, 100, lambda line: None)
    assert files.manifest.topics == {"topic-00000": 100, "topic-00001": 100, "topic-00002": 50}
    assert files.manifest.probe.path == "/image/topics/byName/topic-00001/42"
    assert files.log_records == 101


def test_files_are_kept_and_reused(tmp_path):
    said: list[str] = []
    files = bench_files(tmp_path, 250, 120, said.append)
    stamps = [p.stat().st_mtime_ns for p in (files.snapshot, *files.segments)]
    again: list[str] = []
    assert bench_files(tmp_path, 250, 120, again.append) == files
    assert len(said) == 2 and again == []
    assert [p.stat().st_mtime_ns for p in (files.snapshot, *files.segments)] == stamps
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kafka4-log-120", "kafka4-snapshot-250"]


def test_ls_judge_takes_columns_and_rejects_a_partial_answer():
    assert judge_ls(["a    b", "c"], ["a", "b", "c"]) is None
    assert judge_ls(["a", "b", "c"], ["a", "b", "c"]) is None
    assert "1 missing" in judge_ls(["a", "c"], ["a", "b", "c"])
    assert judge_ls(["ls: /image/topics/byName: no such file or directory"], ["a"]) is not None
    assert judge_ls([], ["a"]) is not None


def test_cat_judge_wants_every_field():
    manifest = _manifest()
    right = ("PartitionRegistration(replicas=[2, 3, 1], directories=[AAAAAAAAAAAAAAAAAAAAAQ, AAAAAAAAAAAAAAAAAAAAAg, "
             "AAAAAAAAAAAAAAAAAAAAAw], isr=[2, 3, 1], removingReplicas=[], addingReplicas=[], elr=[], "
             "lastKnownElr=[], leader=2, leaderRecoveryState=RECOVERED, leaderEpoch=5, partitionEpoch=7)")
    assert judge_cat([right], manifest) is None
    assert judge_cat([right.replace("leaderEpoch=5", "leaderEpoch=4")], manifest) is not None
    assert judge_cat([right.replace("AAAAAAAAAAAAAAAAAAAAAw", "AAAAAAAAAAAAAAAAAAAAAA")], manifest) is not None
    assert judge_cat(["cat: /image/topics/byName/b/1: no such file or directory"], manifest) is not None


def test_find_judge_rejects_a_partial_image():
    manifest = _manifest()
    paths = expected_find(manifest)
    assert paths == ["/image/topics/byName", "/image/topics/byName/a", "/image/topics/byName/a/id",
                     "/image/topics/byName/a/name", "/image/topics/byName/a/0", "/image/topics/byName/b",
                     "/image/topics/byName/b/id", "/image/topics/byName/b/name", "/image/topics/byName/b/0",
                     "/image/topics/byName/b/1"]
    assert judge_find(list(reversed(paths)), sorted(paths)) is None
    assert judge_find(paths[:-1], sorted(paths)) == "9 paths, expected 10: first ['/image/topics/byName']"
    assert judge_find(paths[:-1] + paths[:1], sorted(paths)) is not None  # as many lines, one twice


def test_the_questions_are_the_issues():
    asked = questions(_manifest())
    assert [q.command for q in asked] == ["ls /image/topics/byName", "cat /image/topics/byName/b/1",
                                          "find /image/topics/byName"]
    assert "pwd" not in " ".join(q.command for q in asked)


def test_ratios_pair_by_pair():
    whole, low, high = ratio([2.0, 4.0, 9.0], [1.0, 8.0, 3.0])
    assert whole == pytest.approx(4.0 / 3.0)  # median 4 over median 3
    assert (low, high) == (pytest.approx(0.5), pytest.approx(3.0))  # 2/1, 4/8, 9/3
    with pytest.raises(ValueError):
        ratio([], [1.0])
    assert math.isnan(ratio([1.0], [0.0])[1])


def test_the_table_has_a_column_pair_per_kafka():
    figures = [Figure("first answer, wall", "s", [1.0, 3.0, 2.0], {"4.1.2": [4.0, 4.0, 4.0], "4.3.1": [2.0, 2.0, 2.0]}),
               Figure("dump-log, records/s", "records/s", [1000.0], {"4.1.2": [4000.0]}, higher_is_better=True)]
    lines = table(figures, ["4.1.2", "4.3.1"])
    assert lines[0] == "| figure (median (min - max)) | metashell | Kafka 4.1.2 | ratio | Kafka 4.3.1 | ratio |"
    assert lines[2] == ("| first answer, wall | 2.00 s (1.00 - 3.00) | 4.00 s (4.00 - 4.00) | 0.50 (0.25 - 0.75) "
                        "| 2.00 s (2.00 - 2.00) | 1.00 (0.50 - 1.50) |")
    assert lines[3] == "| dump-log, records/s (higher is better) | 1,000 | 4,000 | 0.25 | - | - |"
    assert cell([512.0, 2048.0], "MiB") == "1,280 MiB (512 - 2,048)"


# A shell that answers as Kafka's may while its loader is still applying batches: the first
# ``ls`` from a partial image, the next ones whole; ``pwd`` answers "/", each prompt is ">> ".
PARTIAL_SHELL = textwrap.dedent("""
    import sys
    print("[ Kafka Metadata Shell ]")
    sys.stdout.write(">> ")
    sys.stdout.flush()
    asked = 0
    for line in sys.stdin:
        words = line.split()
        if words == ["pwd"]:
            print("/")
        elif words[:1] == ["ls"]:
            asked += 1
            print("a" if asked == 1 else "a    b")
        elif words[:1] == ["exit"]:
            break
        sys.stdout.write(">> ")
        sys.stdout.flush()
""")


@pytest.mark.slow
def test_a_partial_answer_is_asked_again():
    asked = [Question("first answer", "ls /x", lambda lines: judge_ls(lines, ["a", "b"]))]
    session = run_session([sys.executable, "-c", PARTIAL_SHELL], asked, "partial", timeout_s=60)
    assert session.reasked == {"first answer": 1}
    assert session.answers["first answer"].seconds <= session.exit.seconds


@pytest.mark.slow
def test_an_answer_never_right_is_one_error():
    asked = [Question("first answer", "ls /x", lambda lines: judge_ls(lines, ["a", "c"]))]
    with pytest.raises(PeerError, match=r"^stubborn: 'ls /x' still wrong after \d+ tries: 2 names of 2"):
        run_session([sys.executable, "-c", PARTIAL_SHELL], asked, "stubborn", timeout_s=1)


@pytest.mark.slow
def test_our_shell_answers_every_question_right(tmp_path):
    files = bench_files(tmp_path, 250, 100, lambda line: None)
    asked = questions(files.manifest)
    session = run_session([sys.executable, "-m", "metashell.cli", "--snapshot", str(files.snapshot)], asked,
                          "metashell", timeout_s=300)
    assert session.reasked == {"first answer": 0, "partition": 0, "whole image": 0}


def test_the_controller_rows_come_from_its_summary():
    from engine.bench.peer import CONTROLLER_SUMMARY

    ours = CONTROLLER_SUMMARY.fullmatch(
        "  kraftd: create 1,000,000 partitions 73.9 s; heartbeat p50 1.0 / p99 2.0 ms; failover to first "
        "CreateTopics min 1 / median 2 / max 3 ms; peak RSS 500 - 1,200 MB")
    assert ours and (ours["side"], ours["seconds"], ours["peak"]) == ("kraftd", "73.9", "1,200")
    theirs = CONTROLLER_SUMMARY.fullmatch("  Kafka 4.3.1: create 300 partitions 0.4 s; heartbeats not reached; "
                                          "failover to first CreateTopics n/a")
    assert theirs and (theirs["side"], theirs["seconds"], theirs["peak"]) == ("Kafka 4.3.1", "0.4", None)
