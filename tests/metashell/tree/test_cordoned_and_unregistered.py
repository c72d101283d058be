"""Kafka 4.3 and 4.4 facts where an operator looks: cordoned log directories (KIP-1066) and
controller unregistrations (KIP-1312), in the shell's /brokers and /controllers, the dashboard's
brokers panel and events, and the export's brokers table and history tables.

The story, replayed record by record: controllers 3000 and 3001 register; broker 1 registers
(RegisterBrokerRecord v4) with log directories D1 and D2 and no cordoned list yet; a
BrokerRegistrationChangeRecord v3 cordons D2; controller 3001 is unregistered; a second change
uncordons D2 (an empty list). Each view is read from the images and change sets of that replay.
"""

from __future__ import annotations

import uuid

from engine.common.kafka_uuid import uuid_to_kafka
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i16, i32, i64, u16
from engine.storage.log_reader import LogEntry
from metashell.dashboard.events import events_of_changes
from metashell.dashboard.panels import broker_rows
from metashell.dashboard.widgets.brokers_panel import broker_cells
from metashell.export.history_tables import history_rows_of
from metashell.export.tables import brokers_table
from metashell.tree.nodes import resolve
from metashell.tree.root import build_tree

D1, D2 = uuid.UUID(int=0xD1), uuid.UUID(int=0xD2)
EPOCH = 42


def _controller(controller_id: int) -> m.RegisterControllerRecordV0:
    endpoint = m.RegisterControllerRecordV0ControllerEndpoint(name="CONTROLLER", host=f"c{controller_id}",
                                                              port=u16(9093), security_protocol=i16(0))
    return m.RegisterControllerRecordV0(controller_id=i32(controller_id), incarnation_id=uuid.UUID(int=controller_id),
                                        zk_migration_ready=False, end_points=(endpoint,), features=())


def _broker() -> m.RegisterBrokerRecordV4:
    endpoint = m.RegisterBrokerRecordV4BrokerEndpoint(name="PLAINTEXT", host="b1", port=u16(9092),
                                                      security_protocol=i16(0))
    return m.RegisterBrokerRecordV4(broker_id=i32(1), is_migrating_zk_broker=False, incarnation_id=uuid.UUID(int=1),
                                    broker_epoch=i64(EPOCH), end_points=(endpoint,), features=(), rack=None,
                                    fenced=False, in_controlled_shutdown=False, log_dirs=(D1, D2))


def _cordon(*dirs: uuid.UUID) -> m.BrokerRegistrationChangeRecordV3:
    return m.BrokerRegistrationChangeRecordV3(broker_id=i32(1), broker_epoch=i64(EPOCH), fenced=i8(0),
                                              cordoned_log_dirs=tuple(dirs))


STORY = [_controller(3000), _controller(3001), _broker(), _cordon(D2),
         m.UnregisterControllerRecordV0(controller_id=i32(3001)), _cordon()]


def _entries() -> list[LogEntry]:
    return [LogEntry(offset, 5, 1_000 + offset, record, False) for offset, record in enumerate(STORY)]


def _replay(upto: int) -> tuple[MetadataImage, list]:
    """The image after STORY[:upto], and each record's change set."""
    image, changes = MetadataImage(), []
    for entry in _entries()[:upto]:
        delta = MetadataDelta(image)
        delta.replay(entry.record, entry.offset, entry.leader_epoch, entry.timestamp_ms)
        image = delta.apply()
        changes.append((delta.changes(), image))
    return image, changes


def test_the_shell_shows_cordoned_directories_and_forgets_an_unregistered_controller() -> None:
    before, _ = _replay(3)
    assert resolve(build_tree(before), "/brokers/1/cordoned-directories").value() is None  # not reported yet
    cordoned, _ = _replay(4)
    root = build_tree(cordoned)
    assert resolve(root, "/brokers/1/cordoned-directories").value() == [uuid_to_kafka(D2)]
    assert resolve(root, "/brokers/1/directories").value() == [uuid_to_kafka(D1), uuid_to_kafka(D2)]
    assert sorted(resolve(root, "/controllers").child_names()) == ["3000", "3001"]
    after, _ = _replay(6)
    root = build_tree(after)
    assert sorted(resolve(root, "/controllers").child_names()) == ["3000"]
    assert resolve(root, "/brokers/1/cordoned-directories").value() == []  # reported: none cordoned


def test_the_dashboard_shows_cordoned_directories_and_controller_unregistration() -> None:
    image, changes = _replay(6)
    events = [(e.offset, e.kind, e.text) for change_set, after in changes for e in events_of_changes(change_set, after)]
    assert (3, "dirs-cordoned", f"broker 1 log dirs cordoned {uuid_to_kafka(D2)}") in events
    assert (4, "controller-unregister", "controller 3001 unregistered") in events
    assert (5, "dirs-cordoned", f"broker 1 log dirs uncordoned {uuid_to_kafka(D2)}") in events
    assert not any(kind == "controller-unregister" for offset, kind, _ in events if offset != 4)
    cordoned, _ = _replay(4)
    [row] = broker_rows(cordoned)
    assert row.cordoned == 1 and broker_cells(row)[2][0] == "● active, 1 dir cordoned"
    [row] = broker_rows(image)
    assert row.cordoned == 0 and broker_cells(row)[2][0] == "● active"


def test_the_export_shows_cordoned_directories_and_controller_registrations() -> None:
    for upto, cordoned in ((3, None), (4, [uuid_to_kafka(D2)]), (6, [])):
        table = brokers_table(_replay(upto)[0])
        [row] = [dict(zip(table.columns, r)) for r in table.rows]
        assert row["cordoned_directories"] == cordoned, upto
    tables = history_rows_of(MetadataImage(), [_entries()])
    controllers = [dict(zip(tables["controller_registrations"].columns, r))
                   for r in tables["controller_registrations"].rows]
    assert [(r["offset"], r["controller_id"], r["event"], r["incarnation_id"], r["aborted"]) for r in controllers] == [
        (0, 3000, "register", uuid_to_kafka(uuid.UUID(int=3000)), False),
        (1, 3001, "register", uuid_to_kafka(uuid.UUID(int=3001)), False),
        (4, 3001, "unregister", uuid_to_kafka(uuid.UUID(int=3001)), False)]
    fencing = [dict(zip(tables["broker_fencing"].columns, r)) for r in tables["broker_fencing"].rows]
    assert [(r["offset"], r["event"]) for r in fencing] == [(2, "register"), (3, "cordon"), (5, "cordon")]
