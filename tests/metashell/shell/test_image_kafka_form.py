"""How ``/image`` prints, without Kafka (the comparisons with Kafka's own shell are
tests/metashell/tree/test_kafka_shell_*.py): ``ls``, ``cat``, ``tree`` and ``find`` in Kafka's
forms and order, what Kafka 4.3 hides, the provenance of a file against that of a directory,
and our JSON kept by ``cat --json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metashell.shell.session import Session
from metashell.source import Source
from tests.image_edges import write_edge_log


def _session(source: Source, show_secrets: bool = False) -> Session:
    session = Session(source, show_secrets=show_secrets)
    session.load()
    return session


def ask(session: Session, line: str) -> str:
    lines: list[str] = []
    session.out = session.err = lines.append
    session.run_line(line)
    return "".join(f"{line}\n" for line in lines)


@pytest.fixture
def segment(tmp_path: Path) -> Path:
    return write_edge_log(tmp_path / "node")


@pytest.fixture
def session(segment: Path) -> Session:
    return _session(Source(snapshot=segment))


def test_names_sort_as_java_sorts_them(session: Session) -> None:
    assert ask(session, "ls /image/cluster/brokers") == "1\n10\n2\n"
    assert ask(session, "ls /image/topics/byName/orders").split("\n")[:4] == ["0", "1", "10", "11"]
    assert ask(session, "ls /image/scram/SCRAM-SHA-512 /image/scram/SCRAM-SHA-256") == (
        "SCRAM-SHA-512:\nBob\n\nSCRAM-SHA-256:\nalice\n")
    assert ask(session, "ls /brokers") == "1\n2\n10\n"  # our own layout keeps numbers in numeric order


def test_ls_of_several_targets_is_kafkas(session: Session) -> None:
    """Files first by last name, then each directory under its last name, a blank line between;
    an empty directory prints nothing at all (LsCommandHandler.printTargets)."""
    assert ask(session, "ls /image/producerIds/nextProducerId /image/delegationToken /image/acls") == (
        "nextProducerId\n\ndelegationToken:\ntoken-1\n\nacls:\nbyId\n")
    assert ask(session, "ls /image/clientQuotas/ip(10.0.0.1) /image/delegationToken") == (
        "ip(10.0.0.1):\nconnection_creation_rate\n\ndelegationToken:\ntoken-1\n")


def test_cat_prints_kafkas_text_without_headers_and_json_stays_ours(session: Session) -> None:
    assert ask(session, "cat /image/features/metadataVersion /image/clientQuotas/user(alice)/*") == (
        "Optional[4.1-IV1]\n1.048576E7\n1048576.0\n")
    broker = ask(session, "cat /image/cluster/brokers/1")
    assert "listeners=[Endpoint(listenerName='A_LISTENER', securityProtocol=SASL_PLAINTEXT" in broker
    assert "supportedFeatures={a.version: 0+, kraft.version: 1, metadata.version: 7-27}" in broker
    # Kafka sorts directories by Uuid.compareTo, on signed longs: f00f... is negative, so first
    assert "directories=[8A9NfhwqSlGdji9sGjtdcA, ew9NfhwqSlGdji9sGjtdcA], cordonedDirectories=null)" in broker
    assert json.loads(ask(session, "cat --json /image/cluster/brokers/1"))["rack"] == "r1"
    assert ask(session, "cat /image/delegationToken/token-1").startswith(
        "DelegationTokenDatatokenId=token-1(owner=User:alice(tokenRequester=User:alice(renewers=User:bob User:carol, ")
    assert ask(session, "cat /brokers/1/rack /brokers/2/id") == (
        "==> /brokers/1/rack <==\nr1\n\n==> /brokers/2/id <==\n2\n")


def test_tree_prints_the_whole_subtree_as_kafka_does(session: Session) -> None:
    assert ask(session, "tree /image/clientQuotas") == (
        "clientId(<default>)_user(bob):\n  producer_byte_rate:\n    1.0E7\n"
        "clientId(app)_user(alice):\n  request_percentage:\n    0.5\n"
        "ip(10.0.0.1):\n  connection_creation_rate:\n    25.0\n"
        "user(alice):\n  consumer_byte_rate:\n    1.048576E7\n  producer_byte_rate:\n    1048576.0\n")
    assert ask(session, "tree /image/producerIds/nextProducerId") == "5000\n"
    assert ask(session, "tree /brokers/2 -d 1").startswith("/brokers/2\n├── ")  # ours elsewhere
    found = ask(session, "find /image/topics/byId").splitlines()
    assert found[:3] == ["/image/topics/byId", "/image/topics/byId/AAAAAAAAAAAAAAAAAAASNA",
                         "/image/topics/byId/AAAAAAAAAAAAAAAAAAASNA/0"]
    assert found[-3:] == [f"/image/topics/byId/AAAAAAAAAAAAAAAAAAASNA/{n}" for n in ("9", "id", "name")]


def test_what_kafka_4_3_hides_and_what_it_opens(session: Session) -> None:
    """Configs Kafka 4.3 does not define for their type are not under /image (a resource of such
    configs only, not at all), but stay in /configs; zkMigrationState is not listed; as in Kafka,
    any finalized_<name> opens, at 0 when not finalized, and a node id as Integer.valueOf reads it."""
    assert ask(session, "ls /image/configs") == (
        "BROKER\nBROKER:1\nCLIENT_METRICS:cm\nGROUP:g1\nGROUP:two%20words\nTOPIC:orders\n")
    assert ask(session, "ls /image/configs/TOPIC:orders") == "retention.ms\n"
    assert "message.timestamp.difference.max.ms" in ask(session, "ls /configs/TOPIC/orders")
    assert ask(session, "ls /configs/BROKER_LOGGER/1") == "kafka.log\n"
    assert ask(session, "ls /image/features") == (
        "finalized_group.version\nfinalized_transaction.version\nmetadataVersion\n")
    assert ask(session, "cat /image/features/finalized_share.version") == "0\n"
    assert ask(session, "cat /image/features/finalized_metadata.version") == "0\n"
    assert ask(session, "cat /image/cluster/brokers/+1") == ask(session, "cat /image/cluster/brokers/01") == ask(
        session, "cat /image/cluster/brokers/1")
    assert ask(session, "cat /image/cluster/brokers/2147483648").startswith("metashell: cat: ")
    assert ask(session, "cat '/image/configs/GROUP:two words/consumer.heartbeat.interval.ms'") == "5000\n"


def test_secrets_are_redacted_as_kafkas_strict_printer_does(segment: Path) -> None:
    hidden, shown = _session(Source(snapshot=segment)), _session(Source(snapshot=segment), show_secrets=True)
    assert ask(hidden, "cat /image/scram/SCRAM-SHA-256/alice") == (
        "ScramCredentialData(salt=[redacted], storedKey=[redacted], serverKey=[redacted], iterations=[redacted])\n")
    assert ask(shown, "cat /image/scram/SCRAM-SHA-256/alice") == (
        f"ScramCredentialData(salt={b'salt-alice'.hex()}, storedKey=00ff6b, serverKey=76, iterations=8192)\n")
    path = "/image/configs/BROKER:1/listener.name.a.scram-sha-256.sasl.jaas.config"
    assert (ask(hidden, f"cat {path}"), ask(shown, f"cat {path}")) == ("[redacted]\n", "secret-jaas\n")


def test_provenance_of_a_file_is_its_last_data_batch_and_of_a_directory_the_images(segment: Path) -> None:
    """Kafka's shell reads a file as a log and skips control batches: the provenance is the last
    data batch's; ours from the node's directory is the image's (here the same batch)."""
    with open(segment, "ab") as out:  # a leader change after the data, as a quorum writes one
        from engine.records.record_batch import build_batch, encode_batch

        out.write(encode_batch(build_batch(43, [(b"\x00\x00\x00\x02", b"\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00")],
                                           timestamp_ms=1739082761000, leader_epoch=5, control=True)))
    from_file = _session(Source(snapshot=segment))
    assert ask(from_file, "cat /image/provenance") == "offset 42, epoch 4, time 2025-02-09T06:32:40Z[UTC]\n"
    assert json.loads(ask(from_file, "cat --json /image/provenance")) == {
        "last_offset": 42, "last_epoch": 4, "last_timestamp_ms": 1739082760000}
    from_directory = _session(Source(log_dir=segment.parent))
    assert ask(from_directory, "cat /image/provenance") == "offset 43, epoch 5, time 2025-02-09T06:32:41Z[UTC]\n"
