"""Every name the shell shows can be typed back: quota entities, users, groups, config keys and
topics with ``/``, globs, spaces, quotes, backslashes, ``;``, ``%``, empty names, ``.`` and ``..``.

The image comes from real records (engine.records.metadata_records) written to a real log
directory and replayed by the loader; the property test replays arbitrary names through
MetadataDelta. Names are percent-encoded in the tree (metashell.tree.nodes).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import f64, i8, i16, i32, i64, u16
from metashell.tree.nodes import render
from metashell.shell.completion import complete
from metashell.shell.session import Session
from metashell.source import Source
from metashell.tree.nodes import resolve, walk
from tests.shell_session import run, session_over

ODD_NAMES = ["kafka/host1@REALM", "app[1]", "a*b?c", "two words", "it's", 'say "hi"', "back\\slash", "semi;colon",
             "100%", "CN=kafka,OU=ops", "", ".", "..", "-dash", "<default>", "tab\there", "new\nline", "ünï©ødé"]
TOPIC_ID = uuid.UUID(int=7)


def _quota(entity: list[tuple[str, str | None]], key: str, value: float) -> m.ClientQuotaRecordV0:
    return m.ClientQuotaRecordV0(entity=tuple(m.ClientQuotaRecordV0EntityData(entity_type=t, entity_name=n)
                                              for t, n in entity), key=key, value=f64(float(value)), remove=False)


def _records() -> list:
    records: list = [
        m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(27)),
        m.RegisterBrokerRecordV3(
            broker_id=i32(1), is_migrating_zk_broker=False, incarnation_id=uuid.UUID(int=1), broker_epoch=i64(5),
            end_points=(m.RegisterBrokerRecordV3BrokerEndpoint(name="PLAINTEXT", host="b1", port=u16(9092),
                                                               security_protocol=i16(0)),
                        m.RegisterBrokerRecordV3BrokerEndpoint(name="SECURE", host="b1", port=u16(9093),
                                                               security_protocol=i16(3))),
            features=(), rack=None, fenced=False, in_controlled_shutdown=False),
        m.TopicRecordV0(name="orders", topic_id=TOPIC_ID),
        m.PartitionRecordV2(partition_id=i32(0), topic_id=TOPIC_ID, replicas=(i32(1),), isr=(i32(1),),
                            removing_replicas=(), adding_replicas=(), leader=i32(1), leader_recovery_state=i8(1),
                            leader_epoch=i32(3), partition_epoch=i32(4), directories=(),
                            eligible_leader_replicas=None, last_known_elr=None),
        m.AccessControlEntryRecordV0(id=uuid.UUID(int=11), resource_type=i8(2), resource_name="orders",
                                     pattern_type=i8(3), principal="User:CN=kafka/host1,OU=ops", host="*",
                                     operation=i8(3), permission_type=i8(3)),
        _quota([("user", "kafka/host1@REALM")], "producer_byte_rate", 1024),
        _quota([("client-id", "app[1]")], "consumer_byte_rate", 2048),
        _quota([("user", "CN=kafka,OU=ops"), ("client-id", None)], "request_percentage", 50),
    ]
    for index, name in enumerate(ODD_NAMES):
        records += [
            m.UserScramCredentialRecordV0(name=name, mechanism=i8(1), salt=b"s", stored_key=b"k", server_key=b"v",
                                          iterations=i32(4096 + index)),
            m.ConfigRecordV0(resource_type=i8(32), resource_name=name, name="consumer.session.timeout.ms",
                             value=str(45000 + index)),
            m.ConfigRecordV0(resource_type=i8(2), resource_name="orders", name=name or "empty.key",
                             value=f"v{index}"),
            _quota([("user", name)], "request_percentage", float(index)),
            m.DelegationTokenRecordV0(owner="User:alice", requester="User:alice", renewers=(), issue_timestamp=i64(1),
                                      max_timestamp=i64(2), expiration_timestamp=i64(3), token_id=f"tok{name}"),
        ]
    return records


@pytest.fixture()
def session(tmp_path: Path) -> Session:
    return session_over(tmp_path, _records())


def test_find_output_is_input_to_cd_ls_and_cat(session: Session) -> None:
    """Every path find prints opens: cat prints each file's value, cd and ls take each directory."""
    paths = run(session, "find /")
    assert len(paths) == len(set(paths)) > 300
    for path in paths:
        node = resolve(session.root, path)
        if node.is_directory:
            assert run(session, f"cd {path}; pwd") == [path]
            assert run(session, f"ls {path}") == node.child_names()
        else:
            assert run(session, f"cat {path}") == [render(node.human_value())]
    session.cwd = "/"


def test_odd_names_are_listed_encoded_and_open(session: Session) -> None:
    quotas = run(session, "ls /client-quotas")
    assert "user=kafka%2Fhost1@REALM" in quotas and "client-id=app%5B1%5D" in quotas
    # an entity's parts come sorted by type, whatever order its record listed them in (a map in Kafka)
    assert "client-id=<default>,user=CN=kafka%2COU=ops" in quotas
    assert "user=<empty>" in quotas and "user=%3Cdefault%3E" in quotas
    assert run(session, "cat /client-quotas/user=kafka%2Fhost1@REALM/producer_byte_rate") == ["1024.0"]
    assert run(session, "cat /client-quotas/client-id=app%5B1%5D/consumer_byte_rate") == ["2048.0"]
    users = run(session, "ls /scram/SCRAM-SHA-256")
    assert {"kafka%2Fhost1@REALM", "a%2Ab%3Fc", "two%20words", "it%27s", "say%20%22hi%22", "back%5Cslash",
            "semi%3Bcolon", "100%25", "<empty>", "%2E", "%2E%2E", "-dash", "tab%09here", "new%0Aline",
            "ünï©ødé"} <= set(users)
    assert run(session, "cat /scram/SCRAM-SHA-256/%2E%2E")[0].startswith("{")
    assert '"iterations": 4096' in "\n".join(run(session, "cat /scram/SCRAM-SHA-256/kafka%2Fhost1@REALM"))
    assert run(session, "cat /configs/GROUP/semi%3Bcolon/consumer.session.timeout.ms") == ["45007"]
    # an empty resource name is Kafka's default resource (ConfigResource.isDefault), a literal one escaped
    assert run(session, "cat /configs/GROUP/<default>/consumer.session.timeout.ms") == ["45010"]
    assert run(session, "cat /configs/GROUP/%3Cdefault%3E/consumer.session.timeout.ms") == ["45014"]
    assert run(session, "cd /configs/GROUP/%2E%2E; pwd") == ["/configs/GROUP/%2E%2E"]
    assert run(session, "cat ../%2E/consumer.session.timeout.ms") == ["45011"]  # .. navigates, %2E is a name
    assert run(session, "cat /topics/orders/configs/a%2Ab%3Fc") == ["v2"]
    assert run(session, "cat /delegation-tokens/tok%3Cdefault%3E")[0].startswith("{")
    assert run(session, "cat /image/clientQuotas/user(kafka%2Fhost1@REALM)/producer_byte_rate") == ["1024.0"]
    assert run(session, "cat /image/configs/GROUP:two%20words/consumer.session.timeout.ms") == ["45003"]


def test_globs_match_encoded_names_and_never_by_accident(session: Session) -> None:
    assert run(session, "ls -l /client-quotas/*%2F*") == ["-  producer_byte_rate  1024.0",
                                                          "-  request_percentage  0.0"]
    assert run(session, "find /scram -name 'a%2A*'") == ["/scram/SCRAM-SHA-256/a%2Ab%3Fc"]
    # the literal name a*b?c holds glob characters: typed as shown it opens that one node only
    assert run(session, "ls /configs/GROUP/a%2Ab%3Fc") == ["consumer.session.timeout.ms"]


def test_names_typed_raw_are_found_and_shown_encoded(session: Session) -> None:
    assert run(session, "cat '/configs/GROUP/two words/consumer.session.timeout.ms'") == ["45003"]
    assert run(session, "cd '/scram/SCRAM-SHA-256/'; ls -l \"it's\"")[0].startswith("-  it%27s  {")
    session.cwd = "/"
    assert run(session, "cd /configs/GROUP/semi%3bcolon; pwd") == ["/configs/GROUP/semi%3Bcolon"]
    session.cwd = "/"
    assert run(session, "ls /configs/GROUP/100% /configs/GROUP/100%25")[0] == "/configs/GROUP/100%25:"
    assert run(session, "cd /scram/SCRAM-SHA-256; cat -- -dash")[0].startswith("{")
    session.cwd = "/"


def test_tree_and_completion_show_names_that_work(session: Session) -> None:
    tree = run(session, "tree /client-quotas -d 1")
    assert "├── user=kafka%2Fhost1@REALM/" in tree or "└── user=kafka%2Fhost1@REALM/" in tree
    offered = [c.text for c in complete(session, "cat /client-quotas/user=kafka")]
    assert offered == ["/client-quotas/user=kafka%2Fhost1@REALM/"]
    files = [c.text for c in complete(session, f"cat {offered[0]}")]
    assert files == ["/client-quotas/user=kafka%2Fhost1@REALM/producer_byte_rate",
                     "/client-quotas/user=kafka%2Fhost1@REALM/request_percentage"]
    assert run(session, f"cat {files[0]}") == ["1024.0"]
    assert [c.text for c in complete(session, "cd /scram/SCRAM-SHA-256/two")] == ["/scram/SCRAM-SHA-256/two%20words"]


def test_export_paths_and_the_node_browser_use_the_same_names(session: Session) -> None:
    from metashell.dashboard.widgets.node_browser import NodeBrowser
    from metashell.export.tables import table_for

    table = table_for(session.image, "/client-quotas/user=kafka%2Fhost1@REALM")
    assert [row[0] for row in table.rows] == ["/client-quotas/user=kafka%2Fhost1@REALM",
                                              "/client-quotas/user=kafka%2Fhost1@REALM/producer_byte_rate",
                                              "/client-quotas/user=kafka%2Fhost1@REALM/request_percentage"]
    scram = table_for(session.image, "/configs/GROUP")
    for path in (row[0] for row in scram.rows):
        resolve(session.root, path)  # every exported path opens in the shell
    assert "/configs/GROUP/%2E%2E/consumer.session.timeout.ms" in [row[0] for row in scram.rows]
    browser = NodeBrowser()
    browser.show(session.image, session.info)
    assert browser.detail_text("/client-quotas/user=kafka%2Fhost1@REALM/producer_byte_rate") == "1024.0"
    assert browser.detail_text("/scram/SCRAM-SHA-256").splitlines()[0] == "/scram/SCRAM-SHA-256/  (18 entries)"
    assert "kafka%2Fhost1@REALM" in browser.detail_text("/scram/SCRAM-SHA-256").splitlines()


# -- the property: any name, printed, opens ------------------------------------------------

@given(st.text(max_size=12))
def test_encoded_names_decode_to_themselves(name: str) -> None:
    from metashell.tree.nodes import decode_name, encode_name

    shown = encode_name(name)
    assert decode_name(shown) == name
    assert shown and "/" not in shown and shown not in (".", "..")
    assert not any(c in shown for c in "*?[]'\"\\; ,") and shown.isprintable()


def _image_with(name: str) -> MetadataImage:
    delta = MetadataDelta(MetadataImage())
    delta.replay(m.UserScramCredentialRecordV0(name=name, mechanism=i8(2), salt=b"s", stored_key=b"k",
                                               server_key=b"v", iterations=i32(8192)))
    delta.replay(m.ConfigRecordV0(resource_type=i8(32), resource_name=name, name=name, value="group value"))
    delta.replay(_quota([("user", name), ("client-id", name)], "producer_byte_rate", 7.0))
    delta.replay(m.FeatureLevelRecordV0(name=name or "x", feature_level=i16(3)))
    return delta.apply()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=10))
def test_any_name_printed_by_find_opens_with_cat(name: str) -> None:
    lines: list[str] = []
    session = Session(Source(), out=lines.append, err=[].append)  # find's "no node ... matches" aside
    session.set_image(_image_with(name), None)
    for top in ("/scram", "/configs", "/client-quotas", "/features", "/image/clientQuotas", "/image/configs"):
        lines.clear()
        assert session.run_line(f"find {top} -type f") == 0, lines
        printed = list(lines)
        expected = [(p, n) for p, n in walk(resolve(session.root, top), top) if not n.is_directory]
        assert printed == [p for p, _ in expected]
        for path, node in expected:
            lines.clear()
            assert session.run_line(f"cat {path}") == 0, (path, lines)
            assert lines == [render(node.human_value())]
    lines.clear()
    session.run_line("cat /scram/SCRAM-SHA-512/*")
    assert '"iterations": 8192' in "\n".join(lines)
