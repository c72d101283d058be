"""`metashell record` against real Apache Kafka controllers (the newest server, with its tools:
kafka_recorder_quorum.with_tools), and Kafka's own ``kafka-dump-log`` on the archive it writes.

One quorum for the module (kafka_recorder_quorum: three controllers on a dynamic quorum, a broker,
no NoOps, snapshots every few kilobytes, old snapshots and segments deleted at Kafka's cleanings);
each test records into an archive of its own with a ``metashell record`` process.

- The recorder follows a topic, a topic config, an ACL, a SCRAM user, a client quota and a voter
  added then removed (all through Kafka's clients and tools): after each step the archive,
  opened as a log directory by ``metashell --log-dir ARCHIVE --offset N``, shows it, ``log``
  lists each change at its offset, and the image the archive loads to at the end is the
  leader's own at the same offset.
- ``kafka-dump-log`` (batches only, and with ``--cluster-metadata-decoder``) reads every segment
  and snapshot of an archive (small segments and a snapshot of the recorder's own every ten
  records), every batch valid and none left out, and prints each batch of the archive's segments
  as it prints the same batch of the leader's segments (but for its position in the file).
Each test ends with the archive against the controllers' own logs, byte for byte, over the
offsets both hold (tests/archive_compare.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest

from archive_compare import manifest, metadata_dir, segment_files
from engine.image.metadata_loader import load_log_dir
from kafka_peer.cluster import KafkaCluster
from tests.metashell.record.kafka_dump_reading import (
    DUMP_MODES, assert_consecutive, dump_sections, dumped_batches, read_by_kafka)
from tests.metashell.record.kafka_recorder_quorum import (
    Recorder, assert_like_the_controllers, forgetful_quorum, metashell, revived, wait_voters_caught_up)
from tests.metashell.record.kafka_recorder_steps import (
    add_controller, add_scram_user, allow_read, create_topic, remove_controller, set_topic_config, set_user_quota,
    unique)

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


@pytest.fixture(scope="module")
def _quorum(kafka_newest_server, tmp_path_factory) -> Iterator[KafkaCluster]:
    yield from forgetful_quorum(kafka_newest_server, tmp_path_factory.mktemp("recorder-quorum"))


@pytest.fixture
def quorum(_quorum: KafkaCluster) -> KafkaCluster:
    return revived(_quorum)


@pytest.fixture
def recorders() -> Iterator[list[Recorder]]:
    made: list[Recorder] = []
    yield made
    for recorder in made:
        recorder.kill()


def shown(archive: Path, offset: int, command: str) -> list[str]:
    """What ``metashell --log-dir ARCHIVE --offset N -c COMMAND`` prints (its lines), exit 0."""
    done = metashell("--log-dir", str(archive), "--offset", str(offset), "-c", command)
    assert done.returncode == 0, f"metashell on the archive at {offset}, {command!r}: {done.stderr}"
    return done.stdout.splitlines()


def test_the_recorder_follows_topics_configs_acls_scram_quotas_and_voters(quorum, recorders, tmp_path) -> None:
    archive = tmp_path / "archive"
    recorder = Recorder(quorum, archive)
    recorders.append(recorder)
    recorder.start()
    began = recorder.wait_caught_up("the recorder's first catch-up")
    topic, user = unique("recorded"), unique("alice")
    create_topic(quorum, topic, 3, {"retention.ms": "1000000"})
    at_topic = recorder.wait_caught_up("the topic")
    set_topic_config(quorum, topic, "retention.ms", "2000000")
    at_config = recorder.wait_caught_up("the config")
    allow_read(quorum, topic, f"User:{user}")
    at_acl = recorder.wait_caught_up("the ACL")
    add_scram_user(quorum, user)
    at_scram = recorder.wait_caught_up("the SCRAM user")
    set_user_quota(quorum, user, "producer_byte_rate", 1024)
    at_quota = recorder.wait_caught_up("the quota")
    added = add_controller(quorum)
    at_added = recorder.wait_caught_up("the added voter")
    remove_controller(quorum, added)
    last = recorder.wait_caught_up("the removed voter")
    assert recorder.stop() == 0, recorder.log()

    assert topic in shown(archive, at_topic, "ls /topics")
    assert topic not in shown(archive, began, "ls /topics")
    assert shown(archive, at_topic, f"cat /configs/TOPIC/{topic}/retention.ms") == ["1000000"]
    assert shown(archive, at_config, f"cat /configs/TOPIC/{topic}/retention.ms") == ["2000000"]
    acls = json.loads("\n".join(shown(archive, at_acl, "cat --json /acls/*")))
    assert [(a["resourceName"], a["principal"]) for a in acls.values() if a["principal"] == f"User:{user}"] \
        == [(topic, f"User:{user}")]
    assert user in shown(archive, at_scram, "ls /scram/SCRAM-SHA-256")
    assert "SCRAM-SHA-256" not in shown(archive, at_acl, "ls /scram") \
        or user not in shown(archive, at_acl, "ls /scram/SCRAM-SHA-256")
    assert shown(archive, at_quota, f"cat /client-quotas/user={user}/producer_byte_rate") == ["1024.0"]
    assert shown(archive, at_added, "ls /quorum/voters") == ["1", "2", "3", "5"]
    assert shown(archive, last, "ls /quorum/voters") == ["1", "2", "3"]

    # the same history through `log`: each change within its step's offsets (after the step
    # before), as (domain, path, event) -> (old, new)
    done = metashell("--log-dir", str(archive), "-c", "; ".join(
        f"log {path} --json" for path in (f"/configs/TOPIC/{topic}", "/acls", "/scram", "/client-quotas",
                                          "/quorum/voters")))
    assert done.returncode == 0, done.stderr
    steps = [began, at_topic, at_config, at_acl, at_scram, at_quota, at_added, last]
    logged = {}
    for item in map(json.loads, done.stdout.splitlines()):
        if item["offset"] > began:
            step = next(i for i, end in enumerate(steps) if item["offset"] <= end)
            logged[(step, item["domain"], item["path"], item["event"])] = (item["old"], item["new"])
    config = f"/configs/TOPIC/{topic}/retention.ms"
    assert {k: v for k, v in logged.items() if k[1] == "configs"} == {
        (1, "configs", config, "created"): (None, "1000000"), (2, "configs", config, "changed"): ("1000000", "2000000")}
    [(acl, (_, new_acl))] = [(k, v) for k, v in logged.items() if k[1] == "acls"]
    assert (acl[0], acl[3], new_acl["principal"], new_acl["resourceName"]) == (3, "created", f"User:{user}", topic)
    assert [k for k in logged if k[1] == "scram"] == [(4, "scram", f"/scram/SCRAM-SHA-256/{user}", "created")]
    assert logged[(5, "client_quotas", f"/client-quotas/user={user}/producer_byte_rate", "created")] == (None, 1024.0)
    assert sorted(k for k in logged if k[1] == "voters") == [(6, "voters", "/quorum/voters/5", "created"),
                                                             (7, "voters", "/quorum/voters/5", "deleted")]

    made = manifest(archive)
    assert (made["cluster_id"], made["last_offset"]) == (quorum.cluster_id, last)
    assert all(gap["resume"] <= began + 1 for gap in made["gaps"]), f"a gap while following: {made['gaps']}"
    assert_like_the_controllers(quorum, archive, last)
    leader = quorum.node(quorum.wait_leader())
    assert load_log_dir(metadata_dir(archive), offset=last)[0] == load_log_dir(leader.metadata_dir, offset=last)[0]


def test_kafka_dump_log_reads_the_archive_as_it_reads_the_controllers_log(quorum, recorders, tmp_path) -> None:
    archive = tmp_path / "archive"
    # a snapshot of the recorder's own every few records and small segments: several of each to read
    recorder = Recorder(quorum, archive, "--snapshot-every-records", "10", "--segment-bytes", "1024")
    recorders.append(recorder)
    recorder.start()
    recorder.wait_caught_up()
    for i in range(4):
        name = unique(f"dumped-{i}")
        create_topic(quorum, name, 4)
        set_topic_config(quorum, name, "retention.ms", str(1000 + i))
    last = recorder.wait_caught_up("the dumped topics")
    assert recorder.stop() == 0, recorder.log()
    leader = quorum.node(quorum.wait_leader())
    wait_voters_caught_up(quorum, last)
    ours = segment_files(archive) + sorted(metadata_dir(archive).glob("*.checkpoint"))
    assert sum(p.suffix == ".checkpoint" for p in ours) > 1 and sum(p.suffix == ".log" for p in ours) > 1, \
        f"the recorder wrote one snapshot or segment at most: {[p.name for p in ours]}"
    theirs = segment_files(leader.metadata_dir)
    files = [str(p) for p in ours + theirs]
    assert not any("," in f for f in files), "--files splits at commas"
    for flags in DUMP_MODES:
        done = quorum.dist.run("kafka-dump-log", *flags, "--files", ",".join(files), timeout_s=300)
        sections = dump_sections(done.stdout)
        assert sorted(sections) == sorted(files), f"kafka-dump-log {flags} did not dump every file given"
        assert_consecutive(done.stderr, [p for p in ours if p.suffix == ".log"])
        archived: dict[int, list[str]] = {}
        for path in ours:
            archived.update(read_by_kafka(path, sections[str(path)], decoded=bool(flags)))
        kafkas: dict[int, list[str]] = {}
        for path in theirs:
            kafkas.update(dumped_batches(sections[str(path)]))
        common = sorted(set(archived) & set(kafkas))
        assert common and max(common) == max(archived), (
            f"the leader's dump and the archive's share {len(common)} batches, not the archive's last "
            f"({max(archived)})")
        for base in common:
            assert archived[base] == kafkas[base], \
                f"kafka-dump-log {flags}, batch {base}: the archive's differs from the leader's"
    assert_like_the_controllers(quorum, archive, last)
