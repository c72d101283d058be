"""``metashell record`` against a running kraftd cluster (three controllers, one broker), as processes.

Each test records into an archive of its own and ends by comparing it with the leader's own
segments over the offsets both hold, byte for byte (tests/archive_compare.py). The cluster is
shared by the module: a test that stops or kills controllers starts them again before it ends.
"""

from __future__ import annotations

import json
import resource
import shutil
import signal
import threading
from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import (ACL, ACLOperation, ACLPermissionType, ConfigResource, ConfigResourceType, NewTopic,
                         ResourcePattern, ResourceType, ScramMechanism, UserScramCredentialUpsertion)
from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest

from engine.image.image_writer import image_records
from engine.image.metadata_loader import load_log_dir, load_snapshot
from engine.storage.log_reader import list_log_dir
from tests.archive_compare import compare_archive, whole_batches
from tests.live_cluster import CLIENT_TIMEOUT_S, bootstrap, running_cluster
from tests.metashell.record.recorder_process import RecorderProcess, log_end_offset, no_traceback, run_metashell

pytestmark = pytest.mark.slow

CONTROLLERS = ("controller-1", "controller-2", "controller-3")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("record") / "cluster", "--controllers", "3", "--brokers", "1")


def _admin(cluster) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap(cluster, servers=True).split(","),
                            request_timeout_ms=int(CLIENT_TIMEOUT_S * 1000))


def _metadata_dir(cluster, name: str) -> Path:
    return cluster.root / name / "metadata" / "__cluster_metadata-0"


def _leader(cluster) -> str:
    rows = cluster.status()
    return next(name for name, row in rows.items() if row["STATE"] == "leader")


def _wait_leader(cluster) -> str:
    """The leader once one is elected (the status names it): a safety net of tries, each a status call."""
    for _ in range(240):
        try:
            return _leader(cluster)
        except StopIteration:
            threading.Event().wait(0.25)
    raise AssertionError(f"no leader elected:{cluster.logs()}")


def _caught_up(recorder: RecorderProcess, cluster) -> None:
    """Until the archive holds what the leader's log holds now (committed by the time it is read)."""
    recorder.wait_held(log_end_offset(_metadata_dir(cluster, _wait_leader(cluster))) - 1)


def _topic(cluster, name: str) -> None:
    admin = _admin(cluster)
    try:
        admin.create_topics([NewTopic(name, 1, 1)])
    finally:
        admin.close()


def _every_kind_of_change(cluster) -> None:
    admin = _admin(cluster)
    try:
        admin.create_topics([NewTopic("orders", 2, 1)])
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "orders", configs={"retention.ms": "3600000"})])
        made = admin.create_acls([ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                                      ResourcePattern(ResourceType.TOPIC, "orders"))])
        assert not made["failed"]
        assert admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            "alice", ScramMechanism.SCRAM_SHA_256, "pw", iterations=4096)]) == {"alice": None}

        async def quota():
            return await admin._manager.send(AlterClientQuotasRequest(
                entries=[([("user", "alice")], [("producer_byte_rate", 1024.0, False)])], validate_only=False))
        assert [e.error_code for e in admin._manager.run(quota).entries] == [0]
    finally:
        admin.close()


def _contiguous(archive: Path) -> None:
    """No duplicates, no holes: each batch starts where the one before it ended."""
    batches = whole_batches(archive / "__cluster_metadata-0")
    from tests.archive_compare import _last_offset
    expected = min(batches)
    for base in sorted(batches):
        assert base == expected, f"batch at {base}, expected {expected}"
        expected = _last_offset(batches[base]) + 1


def _snapshots_are_the_replayed_images(archive: Path, scratch: Path) -> None:
    """Each snapshot the recorder wrote of its own image holds what the segments replay to there."""
    shutil.copytree(archive, scratch)
    for checkpoint in scratch.rglob("*.checkpoint"):
        checkpoint.unlink()
    snapshots = sorted((archive / "__cluster_metadata-0").glob("*.checkpoint"))
    assert len(snapshots) >= 3
    for path in snapshots:
        ours, _ = load_snapshot(path)
        replayed, _ = load_log_dir(scratch, offset=int(path.name[:20]) - 1)
        assert sorted(map(repr, image_records(ours))) == sorted(map(repr, image_records(replayed))), path.name


def _compare_with_leader(cluster, archive: Path) -> int:
    compared = compare_archive(archive, _metadata_dir(cluster, _wait_leader(cluster)))
    assert compared > 0
    return compared


def _holds_whole(cluster, archive: Path, topics: set[str]) -> None:
    """The archive's image has ``topics``, its batches are the leader's bytes, and it has no hole."""
    image, _ = load_log_dir(archive)
    assert topics <= set(image.topics.by_name)
    _compare_with_leader(cluster, archive)
    _contiguous(archive)


def test_a_recorder_keeps_every_kind_of_change_byte_for_byte(cluster, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    recorder = RecorderProcess(bootstrap(cluster), archive, "--snapshot-every-records", "5")
    try:
        recorder.wait_line(r"following leader")
        _every_kind_of_change(cluster)
        _caught_up(recorder, cluster)
        status = run_metashell("record", "--status", str(archive))
        assert status.returncode == 0 and f"recorder: writing (pid {recorder.pid})" in status.stdout
        assert recorder.stop(signal.SIGTERM) == 0
    finally:
        recorder.kill()
    no_traceback(recorder.lines)
    assert "stopped; the archive holds offsets up to" in recorder.lines[-1]
    image, _ = load_log_dir(archive)
    assert "orders" in image.topics.by_name
    assert {r.name for r in image.configs} >= {"orders"}
    assert any(acl.principal == "User:alice" for acl in image.acls.values())
    assert any(user == "alice" for _, user in image.scram)
    assert any(("user", "alice") in entity for entity in image.client_quotas)
    _compare_with_leader(cluster, archive)
    _contiguous(archive)
    _snapshots_are_the_replayed_images(archive, tmp_path / "replayed")
    after = run_metashell("record", "--status", str(archive))
    assert "recorder: none (the lock is free)" in after.stdout and "gaps: none" in after.stdout


def test_a_recorder_goes_on_through_failover_restarts_and_a_quorum_down(cluster, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    recorder = RecorderProcess(bootstrap(cluster), archive)
    try:
        recorder.wait_line(r"following leader")
        leader = _wait_leader(cluster)
        leader_id = cluster.status()[leader]["ID"]
        mark = len(recorder.lines)
        cluster.ok("kill", leader)  # the leader dies: another is elected
        recorder.wait_line(rf"following leader (?!{leader_id}\b)", after=mark)
        _topic(cluster, "after-failover")
        _caught_up(recorder, cluster)
        cluster.ok("start", leader)  # the controller restarts
        _topic(cluster, "after-restart")
        _caught_up(recorder, cluster)
        held = recorder.wait_held(0).last_offset
        mark = len(recorder.lines)
        for name in CONTROLLERS:  # the whole quorum down
            cluster.ok("stop", name)
        recorder.wait_line(r"disconnected, retrying from offset", after=mark)
        for name in CONTROLLERS:
            cluster.ok("start", name)
        recorder.wait_line(r"following leader", after=mark)
        _topic(cluster, "after-quorum-restart")
        _caught_up(recorder, cluster)
        assert recorder.wait_held(held + 1).last_offset > held
        assert recorder.stop(signal.SIGINT) == 0
    finally:
        recorder.kill()
    no_traceback(recorder.lines)
    _holds_whole(cluster, archive, {"after-failover", "after-restart", "after-quorum-restart"})


def test_a_sigkilled_recorder_resumes_without_duplicates_or_holes(cluster, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    first = RecorderProcess(bootstrap(cluster), archive)
    try:
        first.wait_line(r"following leader")
        _topic(cluster, "before-kill")
        _caught_up(first, cluster)
        refused = run_metashell("record", "--bootstrap-controller", bootstrap(cluster), "--archive", str(archive))
        assert refused.returncode == 1
        assert refused.stderr.strip() == (f"metashell: {archive}: another recorder (pid {first.pid}) is writing "
                                          f"this archive (it holds {archive}/.lock)")
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait()
    finally:
        first.kill()
    # a SIGKILL in the middle of a write leaves half a batch at the end of the active segment
    active = list_log_dir(archive / "__cluster_metadata-0").segments[-1][1]
    whole = active.read_bytes()
    active.write_bytes(whole + whole[:40])
    _topic(cluster, "while-stopped")
    second = RecorderProcess(bootstrap(cluster), archive)
    try:
        line = second.wait_line(r"torn tail")
        assert f"recovered {active}: cut 40 bytes of torn tail" in line
        second.wait_line(r"going on from offset")
        _topic(cluster, "after-kill")
        _caught_up(second, cluster)
        assert second.stop() == 0
    finally:
        second.kill()
    no_traceback(second.lines)
    _holds_whole(cluster, archive, {"before-kill", "while-stopped", "after-kill"})
    manifest = json.loads((archive / "archive.json").read_text())
    cluster_id = manifest["cluster_id"]
    (archive / "archive.json").write_text(json.dumps({**manifest, "cluster_id": "another-cluster"}))
    refused = run_metashell("record", "--bootstrap-controller", bootstrap(cluster), "--archive", str(archive))
    assert refused.returncode == 1
    assert refused.stderr.strip() == (f"metashell: {archive}: the archive is of cluster another-cluster, the quorum is "
                                      f"cluster {cluster_id}: refused (record another cluster in another directory)")


def _limit_file_size(limit: int):
    def preexec() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    return preexec


def test_a_full_disk_is_one_line_then_the_recorder_waits_and_goes_on(cluster, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    # writes that make a file larger than the leader's log is now fail with EFBIG: a disk as good as full
    leader_dir = _metadata_dir(cluster, _wait_leader(cluster))
    leader_bytes = sum(p.stat().st_size for _, p in list_log_dir(leader_dir).segments)
    limit = leader_bytes + 512
    recorder = RecorderProcess(bootstrap(cluster), archive, preexec_fn=_limit_file_size(limit))
    try:
        recorder.wait_line(r"following leader")
        mark = len(recorder.lines)
        for index in range(6):
            _topic(cluster, f"full-disk-{index}")
        failing = recorder.wait_line(r"cannot write the archive", after=mark)
        assert "File too large" in failing and ".log" in failing
        held = recorder.wait_held(0).last_offset
        resource.prlimit(recorder.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        recorder.wait_line(r"writing again", after=mark)
        _caught_up(recorder, cluster)
        assert recorder.wait_held(held + 1).last_offset > held
        assert recorder.stop() == 0
    finally:
        recorder.kill()
    no_traceback(recorder.lines)
    assert sum("cannot write the archive" in line for line in recorder.lines) == 1  # one line, not one a retry
    _holds_whole(cluster, archive, {f"full-disk-{i}" for i in range(6)})
