"""The shell as an operator reads it: cat labels several files, human output names Kafka's enums
while ``cat --json`` keeps Kafka's numbers, ``summary`` names metadata.version, and the docs say
what the tree and the tools are today."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import uuid
from pathlib import Path

import pytest

from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i16, i32, i64, u16
from metashell import cli
from metashell.shell.registry import COMMANDS
from metashell.shell.session import Session
from metashell.tree.nodes import resolve
from tests.shell_session import run, session_over

ROOT = Path(__file__).resolve().parents[3]
TOPIC_ID = uuid.UUID(int=7)
ACL_ID = uuid.UUID(int=11)


def _endpoint(name: str, port: int, protocol: int) -> m.RegisterBrokerRecordV3BrokerEndpoint:
    return m.RegisterBrokerRecordV3BrokerEndpoint(name=name, host="b1", port=u16(port), security_protocol=i16(protocol))


def _records() -> list:
    return [
        m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(27)),
        m.FeatureLevelRecordV0(name="group.version", feature_level=i16(1)),
        m.RegisterBrokerRecordV3(
            broker_id=i32(1), is_migrating_zk_broker=False, incarnation_id=uuid.UUID(int=1), broker_epoch=i64(5),
            end_points=(_endpoint("PLAINTEXT", 9092, 0), _endpoint("SECURE", 9093, 3)), features=(), rack="r1",
            fenced=False, in_controlled_shutdown=False),
        m.RegisterBrokerRecordV3(
            broker_id=i32(2), is_migrating_zk_broker=False, incarnation_id=uuid.UUID(int=2), broker_epoch=i64(6),
            end_points=(_endpoint("SSL", 9094, 1),), features=(), rack="r2", fenced=True,
            in_controlled_shutdown=False),
        m.TopicRecordV0(name="orders", topic_id=TOPIC_ID),
        *(m.PartitionRecordV2(partition_id=i32(p), topic_id=TOPIC_ID, replicas=(i32(1),), isr=(i32(1),),
                              removing_replicas=(), adding_replicas=(), leader=i32(1), leader_recovery_state=i8(p),
                              leader_epoch=i32(3), partition_epoch=i32(4), directories=(),
                              eligible_leader_replicas=None, last_known_elr=None) for p in (0, 1)),
        m.AccessControlEntryRecordV0(id=ACL_ID, resource_type=i8(2), resource_name="orders", pattern_type=i8(4),
                                     principal="User:alice", host="*", operation=i8(4), permission_type=i8(3)),
        m.UserScramCredentialRecordV0(name="alice", mechanism=i8(2), salt=b"s", stored_key=b"k", server_key=b"v",
                                      iterations=i32(8192)),
    ]


@pytest.fixture()
def session(tmp_path: Path) -> Session:
    return session_over(tmp_path, _records())


def _text(session: Session, line: str) -> str:
    return "\n".join(run(session, line))


def test_cat_labels_several_files_as_head_does(session: Session) -> None:
    assert run(session, "cat /brokers/1/rack") == ["r1"]  # one file: no label
    assert run(session, "cat /brokers/*/rack") == ["==> /brokers/1/rack <==", "r1", "",
                                                   "==> /brokers/2/rack <==", "r2"]
    assert run(session, "cat /brokers/2/state /brokers/1/epoch") == ["==> /brokers/2/state <==", "fenced", "",
                                                                   "==> /brokers/1/epoch <==", "5"]
    session.lines.clear()
    assert session.run_line("cat /brokers/1/rack /brokers") == 1  # what came before is printed, then the error
    assert session.lines == ["==> /brokers/1/rack <==", "r1", "metashell: cat: /brokers: is a directory"]


def test_human_output_names_enums(session: Session) -> None:
    endpoints = json.loads(_text(session, "cat /brokers/1/endpoints"))
    assert [e["securityProtocol"] for e in endpoints] == ["PLAINTEXT", "SASL_SSL"]
    assert json.loads(_text(session, "cat /controllers/../brokers/2/endpoints"))[0]["securityProtocol"] == "SSL"
    assert json.loads(_text(session, "cat /topics/orders/0"))["leaderRecoveryState"] == "RECOVERED"
    assert json.loads(_text(session, "cat /topics/orders/1"))["leaderRecoveryState"] == "RECOVERING"
    acl_path = run(session, "find /acls -type f")[0]
    acl = json.loads(_text(session, f"cat {acl_path}"))
    assert (acl["resourceType"], acl["patternType"], acl["operation"], acl["permissionType"]) == (
        "TOPIC", "PREFIXED", "WRITE", "ALLOW")
    assert json.loads(_text(session, "cat /scram/SCRAM-SHA-512/alice"))["mechanism"] == "SCRAM-SHA-512"
    assert run(session, "cat /features/metadata.version") == ["4.1-IV1 (27)"]
    assert run(session, "cat /features/group.version") == ["1"]
    long = {line.split()[1]: line for line in run(session, "ls -l /brokers/1")}
    assert '"securityProtocol":"PLAINTEXT"' in long["endpoints"]  # ls -l reads as cat does


def test_image_prints_kafkas_text_and_json_stays_ours(session: Session) -> None:
    """/image leaves print as kafka-metadata-shell prints them (its objects' toString()), and
    cat --json keeps our JSON with Kafka's numbers."""
    (broker,) = run(session, "cat /image/cluster/brokers/1")
    assert broker.startswith("BrokerRegistration(id=1, epoch=")
    assert "listeners=[Endpoint(listenerName='PLAINTEXT', securityProtocol=PLAINTEXT" in broker
    assert "Endpoint(listenerName='SECURE', securityProtocol=SASL_SSL" in broker and "rack=Optional[r1]" in broker
    assert json.loads(_text(session, "cat --json /image/cluster/brokers/1"))["endpoints"][1]["security_protocol"] == 3
    acl_id = run(session, "find /acls -type f")[0].rsplit("/", 1)[1]
    (acl,) = run(session, f"cat /image/acls/byId/{acl_id}")
    assert acl.startswith("StandardAcl[resourceType=TOPIC, ") and "operation=WRITE" in acl
    assert json.loads(_text(session, f"cat --json /image/acls/byId/{acl_id}"))["operation"] == 4
    assert run(session, "cat /image/features/metadataVersion") == ["Optional[4.1-IV1]"]
    assert run(session, "cat /image/topics/byName/orders/1")[0].endswith(
        "leaderRecoveryState=RECOVERING, leaderEpoch=3, partitionEpoch=4)")


def test_json_output_keeps_kafkas_numbers(session: Session) -> None:
    assert [e["securityProtocol"] for e in json.loads(_text(session, "cat --json /brokers/1/endpoints"))] == [0, 3]
    assert json.loads(_text(session, "cat --json /topics/orders/1"))["leaderRecoveryState"] == 1
    assert json.loads(_text(session, "cat --json /features/metadata.version")) == 27
    assert json.loads(_text(session, "cat --json /brokers/1/rack")) == "r1"  # text quoted: valid JSON
    acl = json.loads(_text(session, "cat --json /acls/*"))
    assert list(acl.values())[0]["operation"] == 4  # a glob: path -> value, even for one match
    both = json.loads(_text(session, "cat --json /brokers/1/rack /features/metadata.version"))
    assert both == {"/brokers/1/rack": "r1", "/features/metadata.version": 27}
    assert "securityProtocol" in _text(session, "records --type REGISTER_BROKER_RECORD")
    assert '"securityProtocol":3' in _text(session, "records --type REGISTER_BROKER_RECORD")


def test_summary_names_metadata_version(session: Session) -> None:
    summary = dict(line.split(":", 1) for line in run(session, "summary"))
    assert summary["metadata.version"].strip() == "4.1-IV1 (27)"
    assert summary["features"].strip() == "group.version=1"
    assert summary["brokers"].strip() == "2 (1 active, 1 fenced)"


def test_offline_quorum_names_the_end_of_what_was_read(session: Session) -> None:
    assert "high-watermark" not in run(session, "ls /quorum")
    read_end = run(session, "cat /quorum/read-end-offset")
    assert read_end == run(session, "cat /local/end-offset") == [str(len(_records()))]


# -- the docs say what is true ------------------------------------------------------------------

USER_DOCS = [ROOT / "README.md", *(p for p in sorted((ROOT / "docs").glob("*.md"))
                                   if p.name not in ("architecture.md", "performance.md"))]


def test_docs_claim_nothing_done_as_next() -> None:
    """The dashboard exists; offline the tree names no high watermark (only a leader knows it)."""
    for path in USER_DOCS:
        text = path.read_text()
        assert "Next: the dashboard" not in text and "high-watermark" not in text, path.name


def _readme_commands(tool: str) -> list[list[str]]:
    """The runnable ``.venv/bin/TOOL ...`` lines of the README's sh blocks, split as sh splits them."""
    blocks = re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    lines = [shlex.split(line, comments=True) for block in blocks for line in block.replace("\\\n", " ").splitlines()]
    lines = [words[:-1] if words and words[-1] == "&" else words for words in lines]  # run in the background
    return [words[1:] for words in lines if words and words[0] == f".venv/bin/{tool}"]


def _parse_metashell(argv: list[str]) -> argparse.Namespace:
    if argv[0] in cli.DASHBOARD_COMMANDS:
        return cli.build_dashboard_parser(argv[0]).parse_args(argv[1:])
    if argv[0] == "export":
        return cli.build_export_parser().parse_args(argv[1:])
    if argv[0] == "record":
        from metashell.record.command import build_record_parser
        return build_record_parser().parse_args(argv[1:])
    return cli.build_parser().parse_args(argv)


def test_the_readme_live_quickstart_is_what_the_tools_accept() -> None:
    """The quickstart's ``kraftd cluster up --base-port P`` puts the controllers where its
    ``metashell dash --bootstrap-controller`` looks, and every metashell line parses."""
    from engine.tools.cli import build_parser as kraftd_parser
    from engine.cluster.layout import Settings, plan_layout
    from engine.admin.quorum_client import parse_bootstrap

    ups = [kraftd_parser().parse_args(argv) for argv in _readme_commands("kraftd") if argv[:2] == ["cluster", "up"]]
    # the Quickstart's, and the history section's on the same cluster
    assert ups and ups[0].base_port and all(u.base_port == ups[0].base_port for u in ups), \
        "every kraftd cluster up names the same ports"
    up = ups[0]
    controllers, brokers = up.controllers or 3, 5 if up.brokers is None else up.brokers  # cmd_up's defaults
    layout = plan_layout(ROOT / "never-written", controllers=controllers, brokers=brokers, racks=3,
                         ports=range(up.base_port, up.base_port + controllers + brokers), settings=Settings())
    quorum = [("127.0.0.1", node.port) for node in layout.of_role("controller")]
    commands = [_parse_metashell(argv) for argv in _readme_commands("metashell")]
    live = [args for args in commands if getattr(args, "bootstrap_controller", None)]
    assert any(getattr(args, "archive", None) for args in live), "the history section records the quickstart's quorum"
    dash = [args for args, argv in zip(commands, _readme_commands("metashell")) if argv[0] == "dash"]
    assert len(dash) == 1 and parse_bootstrap(dash[0].bootstrap_controller) == quorum
    assert len(live) >= 3 and all(set(parse_bootstrap(args.bootstrap_controller)) <= set(quorum) for args in live)
    shell = [args for args in commands if getattr(args, "commands", None)]
    for args in shell:  # the one-shot examples name commands that exist
        assert all(shlex.split(part)[0] in COMMANDS for part in args.commands.split(";")), args.commands


def test_the_tree_table_of_docs_shell_md_matches_the_tree(session: Session) -> None:
    """Each file docs/shell.md names in a row of its tree table is in the tree."""
    table = {row.split("|")[1].strip(" `"): row.split("|")[2] for row in
             (ROOT / "docs" / "shell.md").read_text().splitlines() if row.startswith("| `/")}
    not_children = {"/brokers/<id>/": {"topic-partition"}, "/quorum/": {"quorum-state", "source"}, "/local/": set()}
    for directory, sample in (("/brokers/<id>/", "/brokers/1"), ("/quorum/", "/quorum"), ("/local/", "/local")):
        documented = set(re.findall(r"`([a-z-]+)/?`", table[directory])) - not_children[directory]
        assert documented <= set(resolve(session.root, sample).child_names()), directory
