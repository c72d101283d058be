"""The demo histories are the controller's: metashell.demo.controller_driver drives the engine's
QuorumController, and nothing in metashell.demo writes a metadata record of its own.

The demo logs are read back from disk and compared with what the controllers returned, so a
second, hand-written PartitionChangeBuilder (or any record written around the controller)
cannot creep back into a demo unnoticed.
"""

from __future__ import annotations

import ast
import uuid
from pathlib import Path

import pytest

from engine.image.metadata_loader import load_log_dir
from engine.records import metadata_records as m
from engine.records.kio_codec import i16
from engine.records.metadata_record_serde import ControlRecord
from engine.storage.log_reader import entries_by_batch, list_log_dir
from metashell.demo import controller_driver
from metashell.demo.controller_driver import ControllerDriver, DemoScriptError

DEMO_PACKAGE = Path(controller_driver.__file__).parent
# the only records metashell.demo names: the bootstrap's input (what `kafka-storage format`
# writes, which the controller turns into its bootstrap transaction) and the node's idle NoOp
WRITTEN_AROUND_THE_CONTROLLER = {"FeatureLevelRecordV0", "NoOpRecordV0"}


def batches_on_disk(log_dir: Path) -> list[list]:
    listing = list_log_dir(log_dir / "__cluster_metadata-0")
    return [list(batch) for _, path in listing.segments for batch in entries_by_batch(path, None, False)]


def not_the_controllers(batches: list[list]) -> list[list]:
    """The batches the controller did not write: the quorum's control batches and the node's
    idle batches (a NoOpRecord alone)."""
    return [b for b in batches if all(e.control for e in b)
            or [e.record.type_name for e in b] == ["NO_OP_RECORD"]]


@pytest.mark.parametrize("which", ["dashboard", "shell"])
def test_every_metadata_record_in_a_demo_log_is_one_a_controller_returned(which: str, dashboard_demo_dir: Path,
                                                                        demo_log_dir: Path) -> None:
    from metashell.demo import dashboard_demo, shell_demo

    driver, log_dir = ((dashboard_demo._CLUSTER, dashboard_demo_dir) if which == "dashboard"
                       else (shell_demo.demo_cluster(), demo_log_dir))
    batches = batches_on_disk(log_dir)
    around = not_the_controllers(batches)
    written = [e.record for b in batches if b not in around for e in b]
    assert written == driver.produced and written  # the same records, in the same order
    kinds = {e.record.type_name for b in batches for e in b}
    assert "PARTITION_CHANGE_RECORD" in kinds and "REGISTER_BROKER_RECORD" in kinds
    assert all(isinstance(e.record, ControlRecord) for b in around for e in b if e.control)


def _named_records(path: Path) -> set[str]:
    """The metadata record classes a module names (``m.XRecordVn`` or imported by name)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and hasattr(m, node.attr):
            names.add(node.attr)
        elif isinstance(node, ast.ImportFrom) and node.module == "engine.records.metadata_records":
            names.update(alias.name for alias in node.names)
    return {n for n in names if n.endswith(tuple(f"RecordV{v}" for v in range(20)))}


def test_metashell_demo_writes_no_metadata_record_of_its_own() -> None:
    named = {path.name: _named_records(path) for path in sorted(DEMO_PACKAGE.glob("*.py"))}
    assert {name: found - WRITTEN_AROUND_THE_CONTROLLER for name, found in named.items()
            if found - WRITTEN_AROUND_THE_CONTROLLER} == {}


def test_the_record_check_sees_a_hand_written_partition_change(tmp_path: Path) -> None:
    module = tmp_path / "builder.py"
    module.write_text("from engine.records import metadata_records as m\n"
                      "record = m.PartitionChangeRecordV2(partition_id=0)\n")
    assert _named_records(module) == {"PartitionChangeRecordV2"}


# -- the driver on small scripts ------------------------------------------------------------------

START_MS = 1_700_000_000_000
FEATURES = (("metadata.version", 7, 27),)


def driver() -> ControllerDriver:
    d = ControllerDriver(cluster_id="q1w2e3r4t5y6u7i8o9p0aa", controllers=(1, 2), start_ms=START_MS,
                         features=FEATURES, id_namespace=uuid.UUID(int=7),
                         bootstrap_records=[m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(27))])
    d.elect(1, (1, 2), (1, 2))
    for broker in (1, 2):
        d.add_broker(broker, None)
        d.register_broker(broker)
        d.heartbeat(broker)
    d.create_topic("t", [[1, 2]], {})
    return d


def test_a_silent_broker_is_fenced_when_its_session_expires() -> None:
    d = driver()
    d.go_silent(2)
    before = len(d.batches)
    d.wait_until_fenced(2, story="fenced")
    image = d.image
    assert image.cluster.brokers[2].fenced and image.topics.topic("t").partitions[0].isr == (1,)
    # its last heartbeat was at the first quiet tick; a session expires once more than
    # broker.session.timeout.ms (Kafka's 9 s) has passed: ten quiet ticks, a NoOp each, then the fencing
    assert [r.type_name for _, records, _ in d.batches[before:-1] for r in records] == ["NO_OP_RECORD"] * 10
    assert d.story == [(d.next_offset - 1, "fenced")]
    d.heartbeat(2)
    d.catch_up(2)
    assert not d.image.cluster.brokers[2].fenced and d.image.topics.topic("t").partitions[0].isr == (1, 2)


def test_a_new_leader_claims_and_the_old_one_renounces() -> None:
    d = driver()
    d.elect(2, (2,), (1, 2))
    assert d.controllers[2].is_active and not d.controllers[1].is_active
    d.create_topic("u", [[2]], {})
    assert d.batches[-1][0] == 2 and "u" in d.image.topics.by_name  # written in epoch 2, by 2


def test_one_batch_gathers_the_appends_and_answers_after_the_commit() -> None:
    d = driver()
    before = len(d.batches)
    with d.one_batch():
        d.create_topic("a", [[1]], {})
        d.create_topic("b", [[2]], {})
    assert len(d.batches) == before + 1 and {"a", "b"} <= set(d.image.topics.by_name)


@pytest.mark.parametrize("script, message", [
    (lambda d: d.create_topic("t", [[1]], {}), "CreateTopicsRequest refused: topic_already_exists"),
    (lambda d: d.register_broker(1), "broker 1 is already running"),
    (lambda d: d.controlled_shutdown(3), "no broker 3 in the script"),
])
def test_a_script_error_is_one_line(script, message: str) -> None:
    with pytest.raises(DemoScriptError) as raised:
        script(driver())
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_nothing_is_active_before_an_election() -> None:
    d = ControllerDriver(cluster_id="c", controllers=(1,), start_ms=0, features=FEATURES, bootstrap_records=[])
    d.add_broker(1, None)
    with pytest.raises(DemoScriptError, match="no controller is active"):
        d.register_broker(1)


def test_the_log_written_reads_back_as_the_image(tmp_path: Path) -> None:
    d = driver()
    d.write_log(tmp_path)
    image, info = load_log_dir(tmp_path)
    assert image.topics == d.image.topics and image.cluster == d.image.cluster and info.skipped_records == 0
    entries = [e for b in batches_on_disk(tmp_path) for e in b]
    assert [e.timestamp_ms for e in entries][-1] == START_MS + 1000 * (len(d.batches) - 1)
