"""The dashboard's demo history (metashell/demo/dashboard_demo.py) and ``metashell dash`` / ``demo``.

The history is replayed by the engine's own loader at every offset of DEMO_STORY, and each key
moment is checked from the image alone: what an operator would see at that point. The ELR
values follow KIP-966 as Kafka's PartitionChangeBuilder implements it (min ISR 2).
"""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Callable

import pytest

from engine.admin.log_dump import dump_files
from engine.image.image_writer import image_records
from engine.storage.log_reader import entries_by_batch, list_log_dir
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import load_log_dir
from engine.records.metadata_record_serde import ControlRecord, UnknownRecord
from engine.storage.snapshot_writer import SnapshotId, write_snapshot
from metashell import cli
from metashell.demo.dashboard_demo import (
    CONTROLLERS, DEMO_BATCHES, DEMO_STORY, END_OFFSET, REASSIGNMENTS, START_MS, TOPICS, directory_id,
    write_dashboard_demo,
)


@pytest.fixture
def demo_dir(dashboard_demo_dir: Path) -> Path:
    return dashboard_demo_dir


def image_at(demo_dir: Path, offset: int) -> MetadataImage:
    image, info = load_log_dir(demo_dir, offset=offset)
    assert info.skipped_records == 0 and not info.notes
    assert image.provenance.last_offset == offset
    return image


def part(image: MetadataImage, topic: str, partition: int):
    return image.topics.by_id[image.topics.by_name[topic]].partitions[partition]


def registration_offsets() -> list[dict[int, int]]:
    """The offsets of the RegisterBrokerRecords in the log, by broker: the first registrations,
    then each later one."""
    found: list[dict[int, int]] = []
    offset = 0
    for _, records, _ in DEMO_BATCHES:
        for record in records:
            if getattr(record, "type_name", "") == "REGISTER_BROKER_RECORD":
                round_ = next((r for r in found if record.broker_id not in r), None)
                if round_ is None:
                    found.append(round_ := {})
                round_[record.broker_id] = offset
            offset += 1
    return found


def all_parts(image: MetadataImage):
    for topic in image.topics.by_id.values():
        for pid, p in topic.partitions.items():
            yield f"{topic.name}-{pid}", p


# -- the story, moment by moment ----------------------------------------------------------------


def _quorum_formed(image: MetadataImage) -> None:
    quorum = image.quorum
    assert (quorum.leader.leader_id, quorum.leader.epoch, quorum.leader.offset) == (100, 1, 0)
    assert quorum.kraft_version == 1
    assert [v.id for v in quorum.voters] == list(CONTROLLERS)
    for voter in quorum.voters:
        assert voter.directory_id == directory_id(voter.id)
        assert voter.endpoints == (("CONTROLLER", f"controller-{voter.id}", 9093),)


def _brokers_up(image: MetadataImage) -> None:
    brokers = image.cluster.brokers
    assert sorted(brokers) == [1, 2, 3, 4, 5]
    assert all(b.state == "active" for b in brokers.values())
    assert {b.rack for b in brokers.values()} == {"rack-a", "rack-b", "rack-c"}
    assert sorted(image.cluster.controllers) == list(CONTROLLERS)
    assert image.features["metadata.version"] == 27  # 4.1-IV1
    assert image.features["eligible.leader.replicas.version"] == 1
    assert {b.id: b.epoch for b in brokers.values()} == registration_offsets()[0]  # Kafka's broker epochs


def _topics_created(image: MetadataImage) -> None:
    assert sorted(image.topics.by_name) == ["audit", "orders", "payments"]
    for name, (assignments, configs) in TOPICS.items():
        assert image.configs[(2, name)] == configs
        for pid, replicas in enumerate(assignments):
            p = part(image, name, pid)
            assert (p.replicas, p.isr, p.leader, p.elr, p.last_known_elr) == (tuple(replicas), tuple(replicas),
                                                                             replicas[0], (), ())
    assert image.configs[(2, "orders")]["min.insync.replicas"] == "2"
    assert image.configs[(2, "payments")]["min.insync.replicas"] == "2"
    assert len(part(image, "audit", 0).replicas) == 2


def _broker_3_fenced(image: MetadataImage) -> None:
    assert image.cluster.brokers[3].state == "fenced"
    assert all(3 not in p.isr and p.leader != 3 for _, p in all_parts(image))
    assert part(image, "orders", 2).leader == 4 and part(image, "payments", 1).leader == 5
    assert part(image, "orders", 0).isr == (1, 2)
    assert all(not p.elr for _, p in all_parts(image))  # ISR 2 is still min ISR 2


def _broker_3_back(image: MetadataImage) -> None:
    assert image.cluster.brokers[3].state == "active"
    assert all(set(p.isr) == set(p.replicas) for _, p in all_parts(image))


def _preferred_leaders(image: MetadataImage) -> None:
    assert all(p.leader == p.replicas[0] for _, p in all_parts(image))


def _quorum_leader_change(image: MetadataImage) -> None:
    leader = image.quorum.leader
    assert (leader.leader_id, leader.epoch, leader.granting_voters) == (101, 2, (101, 102))
    assert [c.leader_id for c in image.quorum.leader_changes] == [100, 101]
    assert image.provenance.last_epoch == 2


def _broker_5_fenced(image: MetadataImage) -> None:
    assert image.cluster.brokers[5].fenced
    p = part(image, "payments", 0)
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (2, (2, 4), (), ())


def _broker_4_fenced(image: MetadataImage) -> None:
    assert image.cluster.brokers[4].fenced
    p = part(image, "payments", 0)
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (2, (2,), (4,), ())


def _broker_2_fenced(image: MetadataImage) -> None:
    assert image.cluster.brokers[2].fenced
    p = part(image, "payments", 0)
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (-1, (), (2, 4), (2,))
    assert [name for name, p in all_parts(image) if p.leader < 0] == ["payments-0"]


def _elected_from_elr(image: MetadataImage) -> None:
    assert image.cluster.brokers[4].state == "active"
    p = part(image, "payments", 0)
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (4, (4,), (2,), ())
    assert p.leader_epoch == 2  # 2 -> none -> 4


def _elr_cleared(image: MetadataImage) -> None:
    p = part(image, "payments", 0)
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (4, (4, 5), (), ())


def _all_back(image: MetadataImage) -> None:
    assert all(b.state == "active" for b in image.cluster.brokers.values())
    for _, p in all_parts(image):
        assert set(p.isr) == set(p.replicas) and p.leader == p.replicas[0] and not p.elr and not p.last_known_elr


def _controlled_shutdown(image: MetadataImage) -> None:
    broker = image.cluster.brokers[1]
    assert broker.in_controlled_shutdown and not broker.fenced and broker.state == "controlled-shutdown"
    assert all(1 not in p.isr and p.leader != 1 for _, p in all_parts(image))
    assert part(image, "orders", 0).leader == 2


def _broker_1_down(image: MetadataImage) -> None:
    assert image.cluster.brokers[1].state == "fenced"


def _broker_1_registered(image: MetadataImage) -> None:
    broker = image.cluster.brokers[1]
    assert broker.epoch == image.provenance.last_offset != registration_offsets()[0][1]
    assert broker.fenced and not broker.in_controlled_shutdown


def _broker_1_leads(image: MetadataImage) -> None:
    assert image.cluster.brokers[1].state == "active"
    assert part(image, "orders", 0).leader == 1 and part(image, "orders", 5).leader == 1
    _all_back(image)


def _audit_deleted(image: MetadataImage) -> None:
    assert sorted(image.topics.by_name) == ["orders", "payments"]
    assert (2, "audit") not in image.configs


def _reassigning(image: MetadataImage) -> None:
    p = part(image, "payments", 0)
    assert (p.replicas, p.adding_replicas, p.removing_replicas, set(p.isr)) == ((2, 4, 3, 5), (3,), (5,), {2, 4, 5})
    moving = {(name.rsplit("-", 1)[0], int(name.rsplit("-", 1)[1])) for name, p in all_parts(image)
              if p.is_reassigning}
    assert moving == set(REASSIGNMENTS)


def _reassigned(image: MetadataImage) -> None:
    p = part(image, "payments", 0)
    assert (p.replicas, p.adding_replicas, p.removing_replicas, set(p.isr)) == ((2, 4, 3), (), (), {2, 3, 4})
    assert part(image, "orders", 4).leader == 3  # its leader, 5, was removed
    for name, p in all_parts(image):
        assert 5 not in p.replicas and not p.is_reassigning, name
        assert len(p.directories) == len(p.replicas)


def _unregistered(image: MetadataImage) -> None:
    assert sorted(image.cluster.brokers) == [1, 2, 3, 4]
    assert all(b.state == "active" for b in image.cluster.brokers.values())


STORY_CHECKS: list[Callable[[MetadataImage], None]] = [
    _quorum_formed, _brokers_up, _topics_created, _broker_3_fenced, _broker_3_back, _preferred_leaders,
    _quorum_leader_change, _broker_5_fenced, _broker_4_fenced, _broker_2_fenced, _elected_from_elr, _elr_cleared,
    _all_back, _controlled_shutdown, _broker_1_down, _broker_1_registered, _broker_1_leads, _audit_deleted,
    _reassigning, _reassigned, _unregistered,
]


def test_story_offsets_are_in_order_and_in_the_log() -> None:
    offsets = [offset for offset, _ in DEMO_STORY]
    assert offsets == sorted(set(offsets)) and 0 <= offsets[0] and offsets[-1] < END_OFFSET
    assert len(DEMO_STORY) == len(STORY_CHECKS)
    assert all(text and "\n" not in text for _, text in DEMO_STORY)


@pytest.mark.parametrize("index", range(len(STORY_CHECKS)), ids=[c.__name__.strip("_") for c in STORY_CHECKS])
def test_the_image_tells_the_story(demo_dir: Path, index: int) -> None:
    offset, text = DEMO_STORY[index]
    STORY_CHECKS[index](image_at(demo_dir, offset))


def test_elr_episode_record_by_record(demo_dir: Path) -> None:
    """payments-0 (replicas [2, 4, 5], min ISR 2) record by record, as KIP-966 has it: the ELR
    fills only once the ISR is under min ISR, the last leader is remembered when the ISR empties,
    an ELR member is elected when it comes back, and the ELR empties at min ISR again."""
    topic_id = next(t.id for t in image_at(demo_dir, END_OFFSET - 1).topics.by_id.values() if t.name == "payments")
    delta = MetadataDelta(MetadataImage())
    states = []
    for entries in entries_by_batch(list_log_dir(demo_dir / "__cluster_metadata-0").segments[0][1], None, False):
        for entry in entries:
            delta.replay(entry.record, entry.offset, entry.leader_epoch, entry.timestamp_ms)
            if getattr(entry.record, "topic_id", None) == topic_id and getattr(entry.record, "partition_id", -1) == 0:
                p = delta.apply().topics.by_id[topic_id].partitions[0]
                state = (p.leader, p.isr, p.elr, p.last_known_elr)
                if state != (states[-1] if states else None):
                    states.append(state)
    assert states == [
        (2, (2, 4, 5), (), ()),  # created
        (2, (2, 4), (), ()),  # broker 5 fenced: at min ISR, no ELR
        (2, (2,), (4,), ()),  # broker 4 fenced: under min ISR, 4 was in the ISR then
        (-1, (), (2, 4), (2,)),  # broker 2 fenced: leaderless, the last leader remembered
        (4, (4,), (2,), ()),  # broker 4 back: elected from the ELR
        (4, (4, 5), (), ()),  # broker 5 in sync: min ISR again, ELR cleared
        (4, (4, 5, 2), (), ()),
        (2, (4, 5, 2), (), ()),  # the preferred leader again
        (2, (4, 2, 3), (), ()),  # reassigned from [2, 4, 5] to [2, 4, 3]
    ]


def test_the_log_is_what_kafka_writes(demo_dir: Path) -> None:
    listing = list_log_dir(demo_dir / "__cluster_metadata-0")
    assert len(listing.segments) == 1 and not listing.snapshots
    batches = list(entries_by_batch(listing.segments[0][1], None, False))
    assert 60 <= len(batches) <= 150 and len(batches) == len(DEMO_BATCHES)
    assert sum(map(len, batches)) == END_OFFSET
    first = batches[0]
    assert all(e.control for e in first)
    assert [e.record.type_name for e in first] == ["LEADER_CHANGE", "KRAFT_VERSION", "KRAFT_VOTERS"]
    epoch = 0
    for n, batch in enumerate(batches):
        assert {e.timestamp_ms for e in batch} == {START_MS + n * 1000}
        kinds = {isinstance(e.record, ControlRecord) for e in batch}
        assert len(kinds) == 1 and all(e.control == isinstance(e.record, ControlRecord) for e in batch)
        if any(e.record.type_name == "LEADER_CHANGE" for e in batch):
            assert batch[0].leader_epoch == epoch + 1  # a new leader writes first in its new epoch
            epoch += 1
        assert {e.leader_epoch for e in batch} == {epoch}
        assert not any(isinstance(e.record, UnknownRecord) for e in batch)
    image, info = load_log_dir(demo_dir)
    assert info.skipped_records == 0 and not info.notes
    assert info.meta.cluster_id and info.meta.node_id == 101
    assert (info.quorum_state.leader_id, info.quorum_state.leader_epoch) == (101, 2)


def test_dump_log_shows_every_record_decoded(demo_dir: Path) -> None:
    lines: list[str] = []
    notes: list[str] = []
    # a record shown raw (unknown type or version, or bytes that do not decode) would raise here
    count = dump_files([str(demo_dir / "__cluster_metadata-0")], lines.append, notes.append)
    assert count == END_OFFSET
    records = [line for line in lines if line.startswith("| offset: ")]
    assert len(records) == END_OFFSET
    assert not [line for line in records if "unknown" in line.lower()]
    assert all(" payload: " in line or "LeaderChange" in line or "KRaft" in line for line in records), records[:3]


def test_written_the_same_every_time(tmp_path: Path) -> None:
    a, b = write_dashboard_demo(tmp_path / "a"), write_dashboard_demo(tmp_path / "b")
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    for name in files:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


# -- metashell dash / demo ----------------------------------------------------------------------


def _metashell(*args: str | Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "metashell.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL, env=env)


def test_demo_without_a_terminal_prints_a_summary_and_the_story() -> None:
    proc = _metashell("demo")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("\n") == 1 and "needs a terminal" in proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"offset:       {END_OFFSET - 1} of {END_OFFSET - 1}"
    assert "brokers:      4 (4 active)" in lines
    assert any("payments-0 leaderless" in line for line in lines)  # the story


@pytest.mark.slow
def test_dash_without_a_terminal_at_an_offset(demo_dir: Path) -> None:
    offset = next(o for o, text in DEMO_STORY if "leaderless" in text)
    proc = _metashell("dash", "--log-dir", demo_dir, "--offset", offset)
    assert proc.returncode == 0 and proc.stderr.count("\n") == 1 and "needs a terminal" in proc.stderr
    assert f"offset:       {offset} of {END_OFFSET - 1}" in proc.stdout
    assert "leaderless:   1" in proc.stdout and "brokers:      5 (2 active, 3 fenced)" in proc.stdout
    assert "story" not in proc.stdout
    proc = _metashell("dash", "--log-dir", demo_dir, "--print", env=dict(os.environ, CI="true"))
    assert proc.returncode == 0 and proc.stderr == ""  # --print: asked for, so no note
    assert "topics:       2" in proc.stdout


def test_dash_on_a_snapshot_without_a_terminal(demo_dir: Path, tmp_path: Path) -> None:
    offset = next(o for o, text in DEMO_STORY if "leaderless" in text)
    image = image_at(demo_dir, offset)
    snapshot = write_snapshot(tmp_path, SnapshotId(offset + 1, 2), list(image_records(image)),
                              last_contained_log_timestamp_ms=image.provenance.last_timestamp_ms, now_ms=START_MS,
                              fsync=False)
    proc = _metashell("dash", "--snapshot", snapshot)
    assert proc.returncode == 0 and "needs a terminal" in proc.stderr and proc.stderr.count("\n") == 1
    assert f"offset:       {offset}" in proc.stdout and "leaderless:   1" in proc.stdout


def test_demo_dir_keeps_the_history(tmp_path: Path) -> None:
    target = tmp_path / "demo"
    proc = _metashell("demo", "--dir", target, "--print", "--time", str(START_MS))
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.startswith("offset:       2 of ")  # the first batch, three records
    assert (target / "__cluster_metadata-0").is_dir()
    proc = _metashell("--log-dir", target, "-c", "cat /brokers/5/state")
    assert proc.returncode == 1 and "no such node" in proc.stderr  # unregistered at the end
    proc = _metashell("demo", "--dir", target)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert "already holds a metadata log" in proc.stderr and "metashell dash --log-dir" in proc.stderr


@pytest.mark.parametrize("args, fragment", [
    (("dash",), "one of the arguments --snapshot --log-dir --bootstrap-controller is required"),
    (("dash", "--log-dir", "/nonexistent"), "/nonexistent"),
    (("dash", "--log-dir", "x", "--snapshot", "y"), "not allowed with"),
    (("dash", "--snapshot", "x.checkpoint", "--offset", "3"), "need a log directory"),
    (("dash", "--log-dir", "x", "--offset", "ten"), "invalid int value"),
    (("dash", "--log-dir", "x", "--offset", "1", "--time", "0"), "not allowed with"),
    (("demo", "--time", "yesterday"), "yesterday"),
    (("demo", "--bogus"), "unrecognized arguments"),
])
@pytest.mark.slow
def test_bad_arguments_are_one_line(args: tuple[str, ...], fragment: str) -> None:
    proc = _metashell(*args)
    assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
    assert proc.stderr.startswith("metashell: ") and proc.stderr.count("\n") == 1, (args, proc.stderr)
    assert fragment in proc.stderr and "Traceback" not in proc.stderr, (args, proc.stderr)


def test_ci_means_no_terminal(monkeypatch) -> None:
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.delenv("CI", raising=False)
    assert cli.has_terminal()
    for value in ("true", "1", "yes"):
        monkeypatch.setenv("CI", value)
        assert not cli.has_terminal()
    monkeypatch.setenv("CI", "false")
    assert cli.has_terminal()


def test_a_terminal_opens_the_dashboard(monkeypatch, demo_dir: Path) -> None:
    """With a terminal, dash opens DashboardApp over History.open_log_dir at the offset asked
    for (stand-ins here: the app itself is tested with the dashboard)."""
    opened: list = []

    class FakeHistory:
        info = types.SimpleNamespace(notes=("a note",))
        replay = types.SimpleNamespace(check_point=lambda **point: None)  # every point in range here

        @classmethod
        def open_log_dir(cls, path, *, offset=None, time_ms=None):  # the run holding the point, when damaged
            opened.append(("log_dir", Path(path)))
            return cls()

        def at_time(self, time_ms):
            return types.SimpleNamespace(offset=7)

    class FakeApp:
        return_code = 0  # Textual's: the app ended well

        def __init__(self, history, *, offset=None):
            opened.append(("app", type(history).__name__, offset))

        def run(self):
            opened.append(("run",))

    monkeypatch.setitem(sys.modules, "metashell.dashboard.history", types.SimpleNamespace(History=FakeHistory))
    monkeypatch.setitem(sys.modules, "metashell.dashboard.app", types.SimpleNamespace(DashboardApp=FakeApp))
    monkeypatch.setattr(cli, "has_terminal", lambda: True)
    errors: list[str] = []
    assert cli.run(["dash", "--log-dir", str(demo_dir), "--offset", "95"], err=errors.append) == 0
    assert opened == [("log_dir", demo_dir), ("app", "FakeHistory", 95), ("run",)]
    assert errors == ["metashell: note: a note"]
    opened.clear()
    assert cli.run(["dash", "--log-dir", str(demo_dir), "--time", "1772442045000"], err=errors.append) == 0
    assert opened[1] == ("app", "FakeHistory", 7)
    opened.clear()
    assert cli.run(["demo"], err=errors.append) == 0
    assert opened[0][0] == "log_dir" and opened[1:] == [("app", "FakeHistory", None), ("run",)]


def test_the_readme_points_at_the_story() -> None:
    root = Path(__file__).resolve().parents[3]
    readme, dashboard_doc = (root / "README.md").read_text(), (root / "docs" / "dashboard.md").read_text()
    leaderless = next(o for o, text in DEMO_STORY if "leaderless" in text)
    assert f"metashell demo --offset {leaderless}" in readme and "metashell dash --log-dir" in readme
    assert f"metashell demo --offset {leaderless} " in dashboard_doc


def test_the_shell_still_takes_its_old_arguments() -> None:
    proc = _metashell("--demo", "--", "ls", "/brokers")
    assert (proc.returncode, proc.stdout) == (0, "1\n2\n3\n")
    proc = _metashell("--demo", "-c", "dash")  # a shell command line, not the subcommand
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
