"""``kraftd storage format`` and ``kraftd start`` read one file the same way (engine.common.server_config).

Each test pins a point on which the formatter's reader and the start loaders used to disagree,
settled as Kafka reads the file: a listener name in lower case (Kafka upper-cases it), an IPv6
host in brackets (the brackets are not the host), the advertised address of the controller
listener (what kafka-storage puts in the voter record), the port bound, a negative node.id, a
controller.listener.names entry that matches no listener as written, blanks in ``log.dirs`` and
``metadata.log.dir``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.server.broker_settings import check_broker_storage, load_broker_settings
from engine.server.controller_node import check_storage, load_controller_settings
from engine.storage.log_reader import read_file
from engine.tools.cli import run

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
VOTERS_SNAPSHOT = Path("__cluster_metadata-0") / "00000000000000000000-0000000000.checkpoint"


def write_config(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "server.properties"
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def controller_lines(tmp_path: Path, *extra: str, listeners: str = "controller://[::1]:19093",
                     names: str = "CONTROLLER", node_id: str = "1") -> list[str]:
    # blanks around the directories, an empty log.dirs entry: Kafka trims them and drops the entry
    return ["process.roles=controller", f"node.id={node_id}", f"listeners={listeners}",
            f"controller.listener.names={names}", "controller.quorum.bootstrap.servers=[::1]:19093",
            f"metadata.log.dir={tmp_path / 'meta'}   ", f"log.dirs= {tmp_path / 'd1'} ,, {tmp_path / 'd2'} ,", *extra]


def kraftd(*argv: str | Path) -> tuple[int, list[str]]:
    errors: list[str] = []
    return run([str(a) for a in argv], err=errors.append), errors


def voter_endpoints(metadata_dir: Path) -> list[tuple[str, str, int]]:
    (voter,) = [e.record.message for e in read_file(metadata_dir / VOTERS_SNAPSHOT)
                if e.record.type_name == "KRAFT_VOTERS"][0].voters
    return [(e.name, e.host, int(e.port)) for e in voter.endpoints]


def test_a_lowercase_ipv6_controller_listener_reads_alike(tmp_path: Path, capsys) -> None:
    config = write_config(tmp_path, controller_lines(tmp_path))
    assert kraftd("storage", "format", "--config", config, "--cluster-id", CLUSTER_ID, "--standalone") == (0, [])
    capsys.readouterr()
    meta, data = tmp_path / "meta", [tmp_path / "d1", tmp_path / "d2"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d1", "d2", "meta", "server.properties"]
    assert voter_endpoints(meta) == [("CONTROLLER", "::1", 19093)]

    settings = load_controller_settings(config)
    assert (settings.metadata_log_dir, settings.listener_name, settings.bind) == (meta, "CONTROLLER", ("::1", 19093))
    assert settings.endpoints == (("CONTROLLER", ("::1", 19093)),)
    assert check_storage(settings).node_id == 1  # start finds the directory format wrote
    assert all((d / "meta.properties").is_file() for d in data)


def test_the_voter_record_holds_the_advertised_controller_address(tmp_path: Path, capsys) -> None:
    config = write_config(tmp_path, controller_lines(
        tmp_path, "advertised.listeners=CONTROLLER://ctl.example.com:29093", listeners="CONTROLLER://0.0.0.0:19093"))
    assert kraftd("storage", "format", "--config", config, "--cluster-id", CLUSTER_ID, "--standalone") == (0, [])
    capsys.readouterr()
    assert voter_endpoints(tmp_path / "meta") == [("CONTROLLER", "ctl.example.com", 29093)]
    settings = load_controller_settings(config)
    assert settings.endpoints == (("CONTROLLER", ("ctl.example.com", 29093)),) and settings.bind == ("0.0.0.0", 19093)


def test_a_broker_reads_its_dirs_and_listeners_as_format_does(tmp_path: Path, capsys) -> None:
    config = write_config(tmp_path, [
        "process.roles=broker", "node.id=4", "listeners=plaintext://[::1]:19092",
        "controller.listener.names=CONTROLLER",
        "controller.quorum.bootstrap.servers=[::1]:19093", f"log.dirs= {tmp_path / 'd1'} ,, {tmp_path / 'd2'} ,"])
    assert kraftd("storage", "format", "--config", config, "--cluster-id", CLUSTER_ID) == (0, [])
    capsys.readouterr()
    settings = load_broker_settings(config)
    assert settings.log_dirs == (tmp_path / "d1", tmp_path / "d2") and settings.metadata_log_dir == tmp_path / "d1"
    assert settings.binds == (("PLAINTEXT", ("::1", 19092)),)
    assert [(lst.name, lst.host, lst.port) for lst in settings.advertised] == [("PLAINTEXT", "::1", 19092)]
    assert sorted(check_broker_storage(settings)) == [tmp_path / "d1", tmp_path / "d2"]


@pytest.mark.parametrize(("change", "fragment"), [
    ({"listeners": "controller://[::1]:70000"}, "bad listeners entry 'controller://[::1]:70000': port 70000 is not"),
    ({"node_id": "-1"}, "node.id must be a whole number from 0 to"),
    ({"names": "controller"}, "the controller listener controller (controller.listener.names) is not in listeners"),
    ({"listeners": "controller://[::1]:19093,CONTROLLER://:19094"}, "listeners names listener CONTROLLER twice"),
])
def test_format_and_start_refuse_a_bad_file_with_the_same_line(tmp_path: Path, change: dict, fragment: str) -> None:
    config = write_config(tmp_path, controller_lines(tmp_path, **change))
    formatted = kraftd("storage", "format", "--config", config, "--cluster-id", CLUSTER_ID, "--standalone")
    started = kraftd("start", "--config", config)
    assert formatted == started
    code, (line,) = started
    assert code == 1 and line.startswith(f"kraftd: {config}: ") and fragment in line, line
    assert not (tmp_path / "meta").exists()
