"""``kraftd storage format | info | random-uuid``, as ``kafka-storage`` does them (KIP-631, KIP-853).

``format`` writes ``meta.properties`` (version 1) into every log directory,
``bootstrap.checkpoint`` (the initial feature levels) into the metadata log
directory, and — for ``--standalone`` or ``--initial-controllers`` — the
``00000000000000000000-0000000000.checkpoint`` snapshot holding
KRaftVersionRecord (kraft.version 1) and VotersRecord, so the quorum starts with
its voters in the log (KIP-853).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from engine.records import metadata_records as m
from engine.common.errors import ConfigError, StorageError
from engine.common.server_config import ServerConfig, parse_list, read_server_config
from engine.common.kafka_uuid import kafka_to_uuid, random_kafka_uuid, uuid_to_kafka
from engine.records.kio_codec import (
    KRaftVersionFeature, KRaftVersionRecord, VotersEndpoint, VotersRecord, VotersVoter, i16, i32, u16,
)
from engine.storage.log_reader import METADATA_PARTITION_DIR
from engine.storage.meta_properties import MetaProperties, read_meta_properties, write_meta_properties
from engine.records.metadata_record_serde import control_record
from engine.image.metadata_version import (
    BY_NAME, KRAFT_VERSION_1_MINIMUM, check_feature_names, feature_levels_for, record_versions,
    resolve_metadata_version,
)
from engine.admin.scram_arguments import scram_records
from engine.storage.snapshot_writer import SnapshotId, write_bootstrap_checkpoint, write_snapshot


@dataclass(frozen=True, slots=True)
class Voter:
    node_id: int
    host: str
    port: int
    directory_id: object  # uuid.UUID


def parse_initial_controllers(text: str) -> list[Voter]:
    """``1@host:9093:DIRID,2@host:9093:DIRID`` (Kafka's --initial-controllers)."""
    voters = []
    for item in parse_list(text):
        node, at, rest = item.partition("@")
        parts = rest.rsplit(":", 2)
        if not at or len(parts) != 3 or not node.isdigit() or not parts[1].isdigit():
            raise ConfigError(f"bad --initial-controllers entry {item!r} (expected ID@HOST:PORT:DIRECTORY_ID)")
        try:
            directory_id = kafka_to_uuid(parts[2])
        except ValueError as exc:
            raise ConfigError(f"bad directory id in --initial-controllers entry {item!r}: {exc}") from None
        voters.append(Voter(int(node), parts[0].strip("[]"), int(parts[1]), directory_id))
    if len({v.node_id for v in voters}) != len(voters):
        raise ConfigError("--initial-controllers names a node id twice")
    return voters


def voters_control_records(voters: list[Voter], listener_name: str) -> list:
    feature = KRaftVersionFeature(min_supported_version=i16(0), max_supported_version=i16(1))
    record = VotersRecord(version=i16(0), voters=tuple(
        VotersVoter(voter_id=i32(v.node_id), voter_directory_id=v.directory_id,
                    endpoints=(VotersEndpoint(name=listener_name, host=v.host, port=u16(v.port)),),
                    k_raft_version_feature=feature)
        for v in voters))
    return [control_record(KRaftVersionRecord(version=i16(0), k_raft_version=i16(1))), control_record(record)]


def format_storage(config_path: Path, cluster_id: str, *, release_version: str | None = None,
                   standalone: bool = False, initial_controllers: str | None = None,
                   no_initial_controllers: bool = False, ignore_formatted: bool = False,
                   features: dict[str, int] | None = None, now_ms: int | None = None,
                   add_scram: Sequence[str] = (), out: Callable[[str], None] = print) -> list[Path]:
    """Format every log directory of the node; returns the directories written. ``add_scram``
    are ``--add-scram`` arguments: SCRAM credentials for bootstrap.checkpoint (KIP-900)."""
    config = read_server_config(config_path)
    _check_cluster_id(cluster_id)
    features = dict(features or {})
    check_feature_names(features)
    level = resolve_metadata_version(release_version, features)
    scram = scram_records(add_scram)  # read before anything is written: a bad one formats nothing
    if scram and not record_versions(level.level).scram:
        raise ConfigError("SCRAM is only supported in metadata.version 3.5-IV2 or later.")
    voters = _initial_voters(config, standalone, initial_controllers, no_initial_controllers)
    _check_kraft_version(level, features.get("kraft.version"), dynamic=bool(voters) or no_initial_controllers)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    directories = list(dict.fromkeys([*config.log_dirs, config.metadata_log_dir]))
    todo = _unformatted(directories, ignore_formatted, out)
    metadata_dir_id = None
    if voters and config.metadata_log_dir in todo:
        mine = next((v for v in voters if v.node_id == config.node_id), None)
        metadata_dir_id = mine.directory_id if mine else None
    for directory in todo:
        directory.mkdir(parents=True, exist_ok=True)
        directory_id = metadata_dir_id if directory == config.metadata_log_dir and metadata_dir_id else \
            random_kafka_uuid()
        write_meta_properties(directory, MetaProperties(1, cluster_id, config.node_id, directory_id))
        if directory == config.metadata_log_dir:
            _write_metadata_files(directory, config, voters, level, features, now_ms, scram)
        out(f"Formatting metadata directory {directory} with metadata.version "
            f"{level.name}." if directory == config.metadata_log_dir else f"Formatting data directory {directory}")
    return todo


def _check_kraft_version(level, requested: int | None, *, dynamic: bool) -> None:
    """kraft.version is 1 exactly when the voters live in the log (KIP-853), which needs 3.9-IV0."""
    kraft_version = 1 if dynamic else 0
    if requested is not None and requested != kraft_version:
        how = "--standalone, --initial-controllers or --no-initial-controllers"
        raise ConfigError(f"kraft.version {requested} conflicts with the quorum configuration "
                          f"({'dynamic' if dynamic else 'static'} voters: kraft.version {kraft_version}; "
                          f"kraft.version 1 comes with {how})")
    if kraft_version == 1 and level.level < BY_NAME[KRAFT_VERSION_1_MINIMUM].level:
        raise ConfigError(f"kraft.version 1 (dynamic voters) needs metadata.version {KRAFT_VERSION_1_MINIMUM} "
                          f"or newer, not {level.name}")


def _check_cluster_id(cluster_id: str) -> None:
    try:
        kafka_to_uuid(cluster_id)
    except ValueError as exc:
        raise ConfigError(f"bad --cluster-id: {exc}") from None


def _initial_voters(config: ServerConfig, standalone: bool, initial: str | None, none: bool) -> list[Voter]:
    chosen = sum([standalone, initial is not None, none])
    if chosen > 1:
        raise ConfigError("use only one of --standalone, --initial-controllers, --no-initial-controllers")
    is_controller = "controller" in config.roles
    static_voters = bool(parse_list(config.props.get("controller.quorum.voters")))
    if chosen and static_voters:
        raise ConfigError("--standalone, --initial-controllers and --no-initial-controllers need "
                          "controller.quorum.bootstrap.servers, not controller.quorum.voters")
    if is_controller and not static_voters and not chosen:
        raise ConfigError("a controller with dynamic voters needs one of --standalone, "
                          "--initial-controllers or --no-initial-controllers")
    if chosen and not is_controller and not none:
        raise ConfigError("--standalone and --initial-controllers are only for controllers")
    if standalone:
        host, port = _controller_endpoint(config)
        return [Voter(config.node_id, host, port, random_kafka_uuid())]
    if initial is not None:
        # A controller the list does not name is formatted too, and joins as an observer.
        return parse_initial_controllers(initial)
    return []


def _controller_endpoint(config: ServerConfig) -> tuple[str, int]:
    """The first controller listener as the controller advertises it, as kafka-storage takes it;
    a wildcard host is localhost."""
    _, (host, port) = config.controller_endpoints()[0]
    return host or "localhost", port


def _unformatted(directories: list[Path], ignore_formatted: bool, out: Callable[[str], None]) -> list[Path]:
    todo = []
    for directory in directories:
        if (directory / "meta.properties").exists():
            if not ignore_formatted:
                raise StorageError("already formatted (use --ignore-formatted to skip formatted directories)",
                                   path=str(directory))
            out("All of the log directories are already formatted." if len(directories) == 1
                else f"Skipping already formatted directory {directory}")
            continue
        todo.append(directory)
    return todo


def _write_metadata_files(directory: Path, config: ServerConfig, voters: list[Voter], level, features: dict,
                          now_ms: int, scram: Sequence[object] = ()) -> None:
    levels = feature_levels_for(level, overrides=features)
    records = [m.FeatureLevelRecordV0(name=name, feature_level=i16(value))
               for name, value in levels]
    records.extend(scram)  # after the feature levels, as Kafka's Formatter adds them
    write_bootstrap_checkpoint(directory, records, now_ms=now_ms)
    if voters:
        listener = config.controller_listener_names[0] if config.controller_listener_names else "CONTROLLER"
        partition_dir = directory / METADATA_PARTITION_DIR
        partition_dir.mkdir(exist_ok=True)
        write_snapshot(partition_dir, SnapshotId(0, 0), [], last_contained_log_timestamp_ms=now_ms,
                       now_ms=now_ms, kraft_control=voters_control_records(voters, listener))


def storage_info(config_path: Path, out: Callable[[str], None] = print) -> list[str]:
    """Print what each log directory holds, as kafka-storage info does; returns the problems found."""
    config = read_server_config(config_path)
    directories = list(dict.fromkeys([*config.log_dirs, config.metadata_log_dir]))
    problems: list[str] = []
    found: list[tuple[Path, MetaProperties]] = []
    for directory in directories:
        if not directory.is_dir():
            problems.append(f"{directory} does not exist")
            continue
        try:
            found.append((directory, read_meta_properties(directory)))
        except StorageError as exc:
            problems.append(exc.one_line())
    out("Found log directories:" if len(found) != 1 else "Found log directory:")
    for directory, _ in found:
        out(f"  {directory}")
    cluster_ids = {meta.cluster_id for _, meta in found}
    for directory, meta in found:
        out("")
        shown = {"cluster.id": meta.cluster_id, "node.id": meta.node_id, "version": meta.version,
                 "directory.id": uuid_to_kafka(meta.directory_id) if meta.directory_id else None}
        fields = ", ".join(f"{key}={value}" for key, value in sorted(shown.items()) if value is not None)
        out(f"Found metadata in {directory}: {{{fields}}}")
        if meta.node_id is not None and meta.node_id != config.node_id:
            problems.append(f"{directory}: node.id {meta.node_id} does not match the configured {config.node_id}")
    if len(cluster_ids) > 1:
        problems.append(f"log directories disagree on cluster.id: {sorted(map(str, cluster_ids))}")
    if problems:
        out("")
        out(f"Found problem{'s' if len(problems) > 1 else ''}:")
        for problem in problems:
            out(f"  {problem}")
    return problems
