"""Snapshots written by a forked child (engine.raft.snapshot_writing), alone and in a real node."""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from pathlib import Path

import pytest

from engine.common.errors import StorageError
from engine.raft.snapshot_writing import CHILD_NICE, can_fork, write_in_child
from engine.records import metadata_records as m
from engine.records.metadata_record_serde import encode_record
from engine.storage.log_reader import read_batches
from engine.storage.snapshot_writer import SnapshotBuilder, SnapshotId
from tests.node_quorum import start_quorum, wait_until

pytestmark = pytest.mark.skipif(not can_fork(), reason="no fork here")


def entries(count: int) -> list:
    return [encode_record(m.TopicRecordV0(name=f"topic-{i}", topic_id=uuid.UUID(int=i + 1))) for i in range(count)]


def builder() -> SnapshotBuilder:
    return SnapshotBuilder(epoch=3, last_contained_log_timestamp_ms=11, now_ms=12)


def in_loop_bytes(items: list) -> bytes:
    made = builder()
    made.add_entries(iter(items))
    return made.finish()


def stage_to(part: Path):
    return part.write_bytes


def wait_for(gate: Path) -> None:
    """In the child (which keeps no inherited descriptor): until the test creates ``gate``."""
    while not gate.exists():
        time.sleep(0.005)


def _at_end(fd: int) -> bool:
    try:
        return os.read(fd, 1) == b""
    except BlockingIOError:
        return False


def gated(items: list, gate: Path):
    """The entries, once ``gate`` exists (read in the child only)."""
    wait_for(gate)
    yield from items


def test_the_child_writes_what_the_in_loop_writer_writes_nicer_while_the_loop_goes_on(tmp_path: Path) -> None:
    items = entries(5000)
    part = tmp_path / "snap.part"
    pids: list[int] = []

    gate = tmp_path / "gate"

    async def scenario() -> None:
        held_r, held_w = os.pipe()  # the child must not hold this: the parent's close of it is final
        try:
            writing = asyncio.create_task(write_in_child(builder, gated(items, gate), stage_to(part), part,
                                                         on_started=pids.append))
            # the child waits at the gate; the loop is free meanwhile: this coroutine runs to its end
            for _ in range(3):
                await asyncio.sleep(0)
            assert not writing.done() and not part.exists()
            # and it runs nicer than its parent, which serves the quorum
            parent = os.getpriority(os.PRIO_PROCESS, 0)
            await wait_until(lambda: pids and os.getpriority(os.PRIO_PROCESS, pids[0]) == min(19, parent + CHILD_NICE),
                             30, "the child reniced")
            # it holds no inherited descriptor: closed here, the pipe reads its end at once
            os.close(held_w)
            held_w = None
            os.set_blocking(held_r, False)
            await wait_until(lambda: _at_end(held_r), 30, "the pipe's end, the child holding none of it")
            gate.touch()
            await writing
        finally:
            gate.touch()  # a failed check leaves no child waiting
            os.close(held_r)
            if held_w is not None:
                os.close(held_w)

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert part.read_bytes() == in_loop_bytes(items)


def test_a_failing_child_is_one_line_and_leaves_no_part(tmp_path: Path) -> None:
    part = tmp_path / "snap.part"

    def failing():
        yield from entries(3)
        raise OSError("disk\nfull")

    with pytest.raises(StorageError) as raised:
        asyncio.run(write_in_child(builder, failing(), stage_to(part), part))
    text = str(raised.value)
    assert "failed: disk full" in text and "\n" not in text
    assert not part.exists()


def test_a_killed_child_is_one_line_and_leaves_no_part(tmp_path: Path) -> None:
    part = tmp_path / "snap.part"
    pids: list[int] = []

    def half_written_then_blocked():
        part.write_bytes(b"half a snapshot")  # what a child killed mid-write leaves
        wait_for(tmp_path / "never")
        yield from entries(3)

    async def scenario() -> None:
        writing = asyncio.create_task(write_in_child(builder, half_written_then_blocked(), stage_to(part),
                                                     part, on_started=pids.append))
        await wait_until(lambda: pids and part.exists(), 30, "the child at its gate")
        os.kill(pids[0], 9)
        with pytest.raises(StorageError, match="was killed by signal SIGKILL"):
            await writing

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert not part.exists()
    with pytest.raises(ChildProcessError):
        os.waitpid(pids[0], os.WNOHANG)  # reaped


def test_cancelling_kills_the_child_and_deletes_its_part(tmp_path: Path) -> None:
    part = tmp_path / "snap.part"
    pids: list[int] = []

    def blocked():
        part.write_bytes(b"partial")
        wait_for(tmp_path / "never")
        yield from entries(3)

    async def scenario() -> None:
        writing = asyncio.create_task(write_in_child(builder, blocked(), stage_to(part), part,
                                                     on_started=pids.append))
        await wait_until(lambda: part.exists(), 30, "the child at its gate")
        writing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await writing

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert not part.exists()
    with pytest.raises(ChildProcessError):
        os.waitpid(pids[0], os.WNOHANG)


# -- a real node: a killed writer, the node serving on, the next snapshot whole ---------------------

@pytest.mark.slow
def test_a_node_whose_snapshot_writer_is_killed_says_so_serves_on_and_writes_the_next_whole(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    items = entries(20_000)

    async def scenario() -> None:
        (config,), (node,) = await start_quorum(tmp_path, count=1)
        try:
            driver, raft_log = node.driver, node.raft_log
            assert driver.snapshot_in_child
            await wait_until(lambda: driver.is_leader, 10, "the solo leader")
            await wait_until(lambda: node.last_committed_offset >= 1, 10, "something committed")
            end = node.last_committed_offset + 1
            with caplog.at_level(logging.ERROR, logger="engine.raft.driver"):
                assert driver.request_snapshot(end, gated(items, tmp_path / "never"),
                                               last_contained_log_timestamp_ms=0) is True
                await wait_until(lambda: driver.snapshot_child_pid is not None, 30, "the writer forked")
                os.kill(driver.snapshot_child_pid, 9)
                await wait_until(lambda: driver.snapshot_child_pid is None, 30, "the writer reaped")
            (line,) = [r.getMessage() for r in caplog.records if "no snapshot" in r.getMessage()]
            assert f"no snapshot at offset {end}" in line and "killed by signal SIGKILL" in line
            assert raft_log.latest_snapshot_id() is None or raft_log.latest_snapshot_id().end_offset < end
            assert not list(raft_log.directory.glob("*.part"))
            # the node served on: it still leads and commits what it appends
            before = node.last_committed_offset
            driver.schedule_append([m.NoOpRecordV0()])
            await wait_until(lambda: node.last_committed_offset > before, 10, "a commit after the kill")
            # the next one is written whole, byte for byte what the in-loop writer makes of it
            end = node.last_committed_offset + 1
            done: list[SnapshotId] = []
            assert driver.request_snapshot(end, iter(items), last_contained_log_timestamp_ms=7,
                                           on_done=done.append) is True
            await wait_until(lambda: done, 60, "the next snapshot installed")
            (sid,) = done
            path = raft_log.directory / sid.file_name
            written = path.read_bytes()
            now_ms = [batch for _, batch in read_batches(path)][0].base_timestamp
            expected = SnapshotBuilder(epoch=sid.epoch, last_contained_log_timestamp_ms=7, now_ms=now_ms,
                                       kraft_control=driver.client.control.control_records_at(end - 1))
            expected.add_entries(iter(items))
            assert written == expected.finish()
            assert driver.is_leader
        finally:
            await node.stop()

    asyncio.run(asyncio.wait_for(scenario(), 120))


_ORPHAN = """
import asyncio, sys, time
from pathlib import Path
from engine.raft.snapshot_writing import write_in_child
from engine.storage.snapshot_writer import SnapshotBuilder

def blocked():
    while True:
        time.sleep(0.01)
        yield from ()

async def main():
    part = Path(sys.argv[1])
    await write_in_child(lambda: SnapshotBuilder(epoch=1, last_contained_log_timestamp_ms=0, now_ms=0), blocked(),
                         part.write_bytes, part, on_started=lambda pid: print(pid, flush=True))

asyncio.run(main())
"""


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "Z"  # dead, not yet reaped by its new parent
    except FileNotFoundError:
        return True


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux only (PR_SET_PDEATHSIG)")
def test_a_writer_dies_with_its_killed_parent(tmp_path: Path) -> None:
    import subprocess
    import sys

    parent = subprocess.Popen([sys.executable, "-c", _ORPHAN, str(tmp_path / "snap.part")], stdout=subprocess.PIPE,
                              text=True, cwd=Path(__file__).resolve().parents[3])
    try:
        child = int(parent.stdout.readline())
        assert not _gone(child)
        parent.kill()
        parent.wait()
        asyncio.run(wait_until(lambda: _gone(child), 30, "the writer gone with its parent"))
    finally:
        parent.kill()
        parent.wait()
