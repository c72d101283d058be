"""The one reader of a node's config (engine.common.server_config), by Kafka's rules: lists as
Csv.parseCsvList, listeners as SocketServerConfigs and CoreUtils.listenerListToEndPoints, the
security protocol map as KafkaConfig.effectiveListenerSecurityProtocolMap, the log dirs as
AbstractKafkaConfig.logDirs and KafkaConfig.metadataLogDir."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.common.errors import ConfigError
from engine.common.server_config import (
    JAVA_INT_MAX, int_setting, parse_endpoints, parse_list, parse_listeners, read_server_config,
    security_protocol_map,
)

WHERE = "/etc/kafka/server.properties"


def refusal(call, *args, **kwargs) -> str:
    with pytest.raises(ConfigError) as info:
        call(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    return message


@pytest.mark.parametrize(("text", "items"), [
    (None, []), ("", []), ("  \t ", []),
    ("a", ["a"]), (" a , b\t,\nc ", ["a", "b", "c"]),
    ("a,,b,", ["a", "b"]), (",a", ["a"]),  # empty entries dropped
    ("a b, c", ["a b", "c"]),  # blanks inside an entry stay
])
def test_a_list_value(text: str | None, items: list[str]) -> None:
    assert parse_list(text) == items


def test_listener_names_are_upper_cased_and_ipv6_hosts_lose_their_brackets() -> None:
    listeners = parse_listeners("controller://[::1]:9093, Plaintext://:9092,SSL://fe80::1%eth0:9094,"
                                "EXT://broker-1.example.com:0", "listeners", WHERE)
    assert listeners == {"CONTROLLER": ("::1", 9093), "PLAINTEXT": ("", 9092), "SSL": ("fe80::1%eth0", 9094),
                         "EXT": ("broker-1.example.com", 0)}
    assert list(listeners) == ["CONTROLLER", "PLAINTEXT", "SSL", "EXT"]  # in the file's order


@pytest.mark.parametrize(("text", "fragment"), [
    ("PLAINTEXT://localhost:65536", "port 65536 is not from 0 to 65535"),
    ("PLAINTEXT://localhost:-1", "port -1 is not from 0 to 65535"),
    ("PLAINTEXT://localhost", "expected NAME://HOST:PORT"),
    ("localhost:9092", "expected NAME://HOST:PORT"),
    ("PLAINTEXT://local host:9092", "expected NAME://HOST:PORT"),  # Kafka's host characters only
    ("://localhost:9092", "no listener name"),
    ("A://h:1,a://h:2", "names listener A twice"),
    ("A://:9092,B://:9092", "2 listeners on port 9092"),
    ("A://10.0.0.1:9092,B://10.0.0.2:9092", "2 listeners on port 9092"),
    ("A://10.0.0.1:9092,B://[::1]:9092,C://h:9092", "3 listeners on port 9092"),
])
def test_bad_listeners_are_one_line_naming_the_key_and_the_file(text: str, fragment: str) -> None:
    message = refusal(parse_listeners, text, "listeners", WHERE)
    assert message.startswith(f"{WHERE}: ") and "listeners" in message and fragment in message, message


def test_two_listeners_share_a_port_only_across_ip_stacks_and_advertised_ones_may() -> None:
    assert parse_listeners("A://10.0.0.1:9092,B://[::1]:9092", "listeners", WHERE) == {
        "A": ("10.0.0.1", 9092), "B": ("::1", 9092)}
    assert len(parse_listeners("A://:0,B://:0", "listeners", WHERE)) == 2  # any free port, twice
    assert len(parse_listeners("A://lb:9092,B://lb:9092", "advertised.listeners", WHERE,
                               distinct_ports=False)) == 2
    # the quorum tool's reading: no check across entries
    assert parse_endpoints("A://h:1,a://h:2", "listeners", None) == [("A", "h", 1), ("A", "h", 2)]


def test_the_security_protocol_map() -> None:
    props = {"listener.security.protocol.map": " internal : sasl_ssl ,EXTERNAL:SSL,internal:PLAINTEXT",
             "controller.listener.names": "CONTROLLER"}
    protocols = security_protocol_map(props, WHERE)
    assert protocols["INTERNAL"] == 0  # the last entry for a name wins, as in Kafka's map
    assert protocols["EXTERNAL"] == 1 and protocols["SASL_SSL"] == 3  # a listener named after its protocol
    assert "CONTROLLER" not in protocols  # an explicit map: no KRaft default for the controller listener
    assert security_protocol_map({"controller.listener.names": "ctl"}, WHERE)["CTL"] == 0
    # without a map only the controller listeners default to PLAINTEXT (engine.net used to default any)
    assert "INTERNAL" not in security_protocol_map({"controller.listener.names": "ctl"}, WHERE)
    for bad in ("INTERNAL", "INTERNAL:TLS", ":SSL"):
        message = refusal(security_protocol_map, {"listener.security.protocol.map": bad}, WHERE)
        assert message.startswith(f"{WHERE}: bad listener.security.protocol.map entry {bad!r}"), message


def test_whole_numbers_as_java_parses_them() -> None:
    assert int_setting({"k": " +12 "}, "k", 5, 0, 100, WHERE) == 12
    assert int_setting({"k": " "}, "k", 5, 0, 100, WHERE) == 5
    for bad in ("1_000", "1.5", "x", str(JAVA_INT_MAX + 1)):
        assert "k must be a whole number from 0 to" in refusal(int_setting, {"k": bad}, "k", 5, 0, JAVA_INT_MAX, WHERE)


def write(tmp_path: Path, **props: str) -> Path:
    path = tmp_path / "server.properties"
    base = {"process.roles": "broker", "node.id": "3", "log.dirs": "/d1"}
    path.write_text("".join(f"{k}={v}\n" for k, v in {**base, **props}.items() if v is not None))
    return path


def test_log_dirs_and_the_metadata_log_dir(tmp_path: Path) -> None:
    config = read_server_config(write(tmp_path, **{"log.dirs": " /d1 ,, /d2 ,", "log.dir": "/ignored"}))
    assert config.log_dirs == (Path("/d1"), Path("/d2")) and config.metadata_log_dir == Path("/d1")
    config = read_server_config(write(tmp_path, **{"log.dirs": None, "log.dir": "/only"}))
    assert config.log_dirs == (Path("/only"),) and config.metadata_log_dir == Path("/only")
    config = read_server_config(write(tmp_path, **{"log.dirs": None, "metadata.log.dir": "/meta  "}))
    assert config.log_dirs == () and config.metadata_log_dir == Path("/meta")  # a STRING is trimmed
    path = write(tmp_path, **{"log.dirs": None})
    assert refusal(read_server_config, path) == f"{path}: neither metadata.log.dir nor log.dirs (or log.dir) is set"


@pytest.mark.parametrize(("changes", "message"), [
    ({"process.roles": "broker,broker"}, "process.roles must be broker, controller or both, got 'broker,broker'"),
    ({"process.roles": "Broker"}, "process.roles must be broker, controller or both, got 'Broker'"),
    ({"process.roles": None}, "process.roles must be broker, controller or both, got None"),
    ({"node.id": None}, "missing node.id"),
    ({"node.id": "-1"}, f"node.id must be a whole number from 0 to {JAVA_INT_MAX}, got '-1'"),
    ({"listeners": "PLAINTEXT://:9092,PLAINTEXT://:9093"}, "listeners names listener PLAINTEXT twice"),
    ({"advertised.listeners": "PLAINTEXT://h"}, "bad advertised.listeners entry 'PLAINTEXT://h'"),
])
def test_a_bad_file_is_one_line_naming_it(tmp_path: Path, changes: dict, message: str) -> None:
    path = write(tmp_path, **changes)
    assert refusal(read_server_config, path).startswith(f"{path}: {message}")


def test_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.properties"
    assert refusal(read_server_config, path) == f"{path}: no such file"


def test_controller_endpoints_as_kafka_finds_them(tmp_path: Path) -> None:
    config = read_server_config(write(tmp_path, **{
        "process.roles": "controller", "listeners": "ctl://0.0.0.0:9093,OTHER://:9094",
        "advertised.listeners": "CTL://ctl.example.com:19093", "controller.listener.names": "CTL,OTHER"}))
    assert config.controller_endpoints() == [("CTL", ("ctl.example.com", 19093)), ("OTHER", ("", 9094))]
    # Kafka compares controller.listener.names as written with the upper-cased listener names
    lower = read_server_config(write(tmp_path, **{"listeners": "CTL://:9093", "controller.listener.names": "ctl"}))
    assert refusal(lower.controller_endpoints).endswith("is not in listeners 'CTL://:9093' (listener names are "
                                                        "upper-case: write CTL)")
    assert "controller.listener.names is not set" in refusal(read_server_config(write(tmp_path)).controller_endpoints)
