"""The Raft ``quorum-state`` file in ``__cluster_metadata-0/``: a node's election state.

One line of compact JSON, the fields of Kafka's QuorumStateData at some version
plus ``data_version``:

* 0: ``{"clusterId":"","leaderId":1,"leaderEpoch":3,"votedId":-1,"appliedOffset":0,
  "currentVoters":[{"voterId":1}],"data_version":0}``
* 1 (KIP-853, kraft.version 1): ``{"leaderId":1,"leaderEpoch":3,"votedId":-1,
  "votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}``

A node must persist a vote before it answers the vote request, hence the
atomic and durable write.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from engine.common.errors import StorageError
from engine.common.file_io import StrPath, read_text_file, write_bytes_atomically
from engine.common.kafka_uuid import ZERO_UUID, kafka_to_uuid, uuid_to_kafka

QUORUM_STATE_FILE = "quorum-state"
SUPPORTED_DATA_VERSIONS = (0, 1)
_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)


@dataclass(frozen=True)
class QuorumStateData:
    """Election state; fields a data_version lacks keep their defaults."""

    leader_id: int = -1
    leader_epoch: int = -1
    voted_id: int = -1
    voted_directory_id: uuid.UUID | None = None  # v1 only; None is Kafka's ZERO_UUID
    current_voters: tuple[int, ...] | None = None  # v0 only
    cluster_id: str = ""  # v0 only
    applied_offset: int = 0  # v0 only
    data_version: int = 1


def read_quorum_state(path: StrPath) -> QuorumStateData:
    """Read a quorum-state file of data_version 0 or 1."""
    return parse_quorum_state(read_text_file(path), path=path)


def write_quorum_state(path: StrPath, data: QuorumStateData) -> None:
    """Write ``data`` at its data_version exactly as Kafka does, atomically and durably."""
    write_bytes_atomically(path, dump_quorum_state(data).encode("utf-8"))


def parse_quorum_state(text: str, path: StrPath | None = None) -> QuorumStateData:
    """Decode quorum-state JSON; StorageError naming the file and the problem."""
    where = None if path is None else str(path)
    if not text.strip():
        raise StorageError("empty quorum-state file", path=where)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise StorageError(f"not valid JSON at line {e.lineno} column {e.colno}: {e.msg}",
                           path=where) from None
    if not isinstance(obj, dict):
        raise StorageError(f"expected a JSON object, found {type(obj).__name__}", path=where)
    version = _field(obj, "data_version", where, int, (0, 0x7FFF))
    if version not in SUPPORTED_DATA_VERSIONS:
        raise StorageError(f"unsupported data_version {version} (supported: 0 and 1)", path=where)
    common = dict(
        leader_id=_field(obj, "leaderId", where, int, _INT32),
        leader_epoch=_field(obj, "leaderEpoch", where, int, _INT32),
        voted_id=_field(obj, "votedId", where, int, _INT32),
        data_version=version,
    )
    if version == 1:
        return QuorumStateData(**common, voted_directory_id=_directory_id(obj, where))
    return QuorumStateData(**common, cluster_id=_field(obj, "clusterId", where, str),
                           applied_offset=_field(obj, "appliedOffset", where, int, _INT64),
                           current_voters=_voters(obj, where))


def dump_quorum_state(data: QuorumStateData) -> str:
    """The exact text Kafka writes: its key order, no spaces, no trailing newline."""
    _check_writable(data)
    head = f'"leaderId":{data.leader_id},"leaderEpoch":{data.leader_epoch},"votedId":{data.voted_id}'
    if data.data_version == 1:
        voted_dir = _json_string(uuid_to_kafka(data.voted_directory_id))
        return f'{{{head},"votedDirectoryId":{voted_dir},"data_version":1}}'
    voters = ("null" if data.current_voters is None else
              "[" + ",".join(f'{{"voterId":{v}}}' for v in data.current_voters) + "]")
    return (f'{{"clusterId":{_json_string(data.cluster_id)},{head},'
            f'"appliedOffset":{data.applied_offset},"currentVoters":{voters},"data_version":0}}')


def _check_writable(data: QuorumStateData) -> None:
    """Refuse what the chosen version cannot hold, as Kafka's JSON converter does."""
    if data.data_version not in SUPPORTED_DATA_VERSIONS:
        raise ValueError(f"unsupported quorum-state data_version {data.data_version}")
    if data.data_version == 1:
        lost = {"current_voters": data.current_voters is not None,
                "cluster_id": data.cluster_id != "", "applied_offset": data.applied_offset != 0}
    else:
        lost = {"voted_directory_id": data.voted_directory_id not in (None, ZERO_UUID)}
    for name, is_set in lost.items():
        if is_set:
            raise ValueError(f"{name} cannot be written at quorum-state data_version {data.data_version}")


def _json_string(s: str) -> str:
    # Jackson escapes '"', '\\' and control characters (upper-case hex) and leaves the rest.
    short = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    out = (short.get(c) or (f"\\u{ord(c):04X}" if ord(c) < 0x20 else c) for c in s)
    return '"' + "".join(out) + '"'


def _field(obj: dict[str, Any], key: str, where: str | None, kind: type,
           bounds: tuple[int, int] | None = None) -> Any:
    if key not in obj:
        raise StorageError(f"missing field '{key}'", path=where)
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise StorageError(f"field '{key}' should be {'an integer' if kind is int else 'a string'}, "
                           f"found {json.dumps(value)}", path=where)
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        raise StorageError(f"field '{key}' is out of range: {value}", path=where)
    return value


def _directory_id(obj: dict[str, Any], where: str | None) -> uuid.UUID | None:
    text = _field(obj, "votedDirectoryId", where, str)
    try:
        u = kafka_to_uuid(text)
    except ValueError as e:
        raise StorageError(f"field 'votedDirectoryId': {e}", path=where) from None
    return None if u == ZERO_UUID else u


def _voters(obj: dict[str, Any], where: str | None) -> tuple[int, ...] | None:
    if "currentVoters" not in obj:
        raise StorageError("missing field 'currentVoters'", path=where)
    voters = obj["currentVoters"]
    if voters is None:
        return None
    if not isinstance(voters, list):
        raise StorageError("field 'currentVoters' should be a list or null", path=where)
    ids = []
    for i, voter in enumerate(voters):
        if not isinstance(voter, dict):
            raise StorageError(f"currentVoters[{i}] should be an object", path=where)
        ids.append(_field(voter, "voterId", where, int, _INT32))
    return tuple(ids)
