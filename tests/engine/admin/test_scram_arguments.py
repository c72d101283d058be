"""``kraftd storage format --add-scram`` (KIP-900): Kafka's ScramParser rules, the records in
bootstrap.checkpoint, and a controller started on it that knows the user from its own image.
Side by side with Kafka's ``kafka-storage format --add-scram`` in the Kafka-marked test."""

from __future__ import annotations

import asyncio
import base64
import subprocess
from pathlib import Path

import pytest

from engine.common.errors import ConfigError
from engine.net.sasl_mechanisms import scram_credential
from engine.server.controller_server import read_bootstrap_records
from engine.server.scram_credentials import scram_lookup
from engine.admin.scram_arguments import scram_records
from engine.admin.storage_format import format_storage
from engine.net.ports import pick_ports
from engine.server.controller_node import ControllerNode, load_controller_settings
from tests.node_quorum import CLUSTER_ID, TIMEOUTS, wait_until, write_config

SALT = base64.b64encode(b"fixed-salt").decode()
# a fixed salt and iterations, the password form and the salted-password form
ARGUMENTS = [f"SCRAM-SHA-256=[name=alice,password=alice-secret,salt={SALT},iterations=8192]",
             f"SCRAM-SHA-512=[name=bob,saltedpassword={base64.b64encode(b'x' * 64).decode()},salt=\"{SALT}\"]"]


def test_a_password_argument_is_the_credential_of_that_password() -> None:
    alice, bob = scram_records(ARGUMENTS)
    expected = scram_credential("SCRAM-SHA-256", "alice-secret", salt=b"fixed-salt", iterations=8192)
    assert (alice.name, alice.mechanism, alice.salt, alice.iterations) == ("alice", 1, b"fixed-salt", 8192)
    assert (alice.stored_key, alice.server_key) == (expected.stored_key, expected.server_key)
    assert (bob.name, bob.mechanism, bob.salt, bob.iterations) == ("bob", 2, b"fixed-salt", 4096)
    (random,) = scram_records(["SCRAM-SHA-256=[name=carol,password=c]"])
    assert random.iterations == 4096 and random.salt and random.salt.isalnum()  # Kafka's base-36 random salt


@pytest.mark.parametrize("argument,message", [
    ("SCRAM-SHA-256", "Failed to find equals sign in SCRAM argument 'SCRAM-SHA-256'"),
    ("SCRAM-SHA-1=[name=a,password=b]", "The add-scram mechanism SCRAM-SHA-1 is not supported."),
    ("SCRAM-SHA-256=name=a]", "Expected configuration string to start with ["),
    ("SCRAM-SHA-256=[password=b]", "You must supply 'name' to add-scram"),
    ("SCRAM-SHA-256=[name=a]", "You must supply one of 'password' or 'saltedpassword' to add-scram"),
    ("SCRAM-SHA-256=[name=a,saltedpassword=AAAA]", "You must supply 'salt' with 'saltedpassword' to add-scram"),
    ("SCRAM-SHA-256=[name=a,password=b,salt=!!]", "Failed to decode given salt: !!"),
    ("SCRAM-SHA-256=[name=a,password=b,iterations=many]", "Failed to parse iterations count: many"),
    ("SCRAM-SHA-256=[name=a,password=b,iterations=100]",
     "The 'iterations' value must be >= 4096 for add-scram using SCRAM_SHA_256"),
    ("SCRAM-SHA-512=[name=a,password=b,iterations=20000]",
     "The 'iterations' value must be <= 16384 for add-scram using SCRAM_SHA_512"),
    ("SCRAM-SHA-256=[name=a,password=b,colour=red]", "Unknown SCRAM configurations: colour"),
    ("SCRAM-SHA-256=[name=a,password]", "No equals sign found in SCRAM component: password"),
])
def test_a_bad_argument_is_kafkas_one_line(argument: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        scram_records([argument])
    assert str(caught.value) == message


def test_a_release_without_scram_refuses_it_and_formats_nothing(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.properties", 1, 9093, tmp_path / "meta", "127.0.0.1:9093")
    with pytest.raises(ConfigError, match="SCRAM is only supported in metadata.version 3.5-IV2 or later"):
        format_storage(config, CLUSTER_ID, release_version="3.4", add_scram=ARGUMENTS[:1], out=lambda line: None)
    assert not (tmp_path / "meta").exists()


def test_a_controller_formatted_with_add_scram_knows_the_user_from_its_image(tmp_path: Path) -> None:
    """The credentials go into bootstrap.checkpoint after the feature levels; the first active
    controller writes them to the log, and its SCRAM lookup answers from its image."""
    (port,) = pick_ports(1)
    config = write_config(tmp_path / "c.properties", 1, port, tmp_path / "meta", f"127.0.0.1:{port}", **TIMEOUTS)
    format_storage(config, CLUSTER_ID, standalone=True, add_scram=ARGUMENTS, out=lambda line: None)

    async def scenario():
        node = ControllerNode(load_controller_settings(config))
        try:
            await node.start()
            await wait_until(lambda: len(node.image.scram) == 2, 30, "the credentials in the image")
            return scram_lookup(lambda: node.image)
        finally:
            await node.stop()

    records = read_bootstrap_records(tmp_path / "meta")
    assert [r.type_name for r in records][-2:] == ["USER_SCRAM_CREDENTIAL_RECORD"] * 2
    lookup = asyncio.run(asyncio.wait_for(scenario(), 60))
    expected = scram_credential("SCRAM-SHA-256", "alice-secret", salt=b"fixed-salt", iterations=8192)
    assert lookup("SCRAM-SHA-256", "alice") == expected
    assert lookup("SCRAM-SHA-512", "alice") is None and lookup("SCRAM-SHA-512", "bob").iterations == 4096


@pytest.mark.kafka
def test_kraftd_writes_the_scram_records_kafka_storage_writes(kafka_dist, tmp_path: Path) -> None:
    """The same config and --add-scram arguments (fixed salts and iterations) formatted by each
    tool: the bootstrap records, the UserScramCredentialRecords among them, are equal."""
    from kafka_peer.distribution import bootstrap_records

    release = ".".join(kafka_dist.version.split(".")[:2])
    written = {}
    for tool in ("kafka-storage", "kraftd"):
        # log.dirs too: without it Kafka's tool also formats its default /tmp/kafka-logs, shared by every run
        config = write_config(tmp_path / f"{tool}.properties", 1, 9093, tmp_path / tool, "127.0.0.1:9093",
                              **{"log.dirs": str(tmp_path / tool)})
        scram = [arg for argument in ARGUMENTS for arg in ("--add-scram", argument)]
        if tool == "kafka-storage":
            done = subprocess.run(kafka_dist.command("kafka-storage", "format", "-t", CLUSTER_ID, "-c", str(config),
                                                     "--standalone", "--release-version", release, *scram),
                                  capture_output=True, text=True, timeout=180)
            assert done.returncode == 0, done.stdout + done.stderr
        else:
            format_storage(config, CLUSTER_ID, standalone=True, release_version=release, add_scram=ARGUMENTS,
                           out=lambda line: None)
        written[tool] = bootstrap_records(tmp_path / tool)  # wherever the release's formatter puts them
    scram = [r for r in written["kraftd"] if r.type_name == "USER_SCRAM_CREDENTIAL_RECORD"]
    assert len(scram) == 2
    assert written["kraftd"] == written["kafka-storage"]
