"""Fuzz targets: each feeds arbitrary bytes to one of our real decoders.

A target takes bytes and returns quietly when the decoder accepted them or rejected them
the way a user may see: with one of our documented errors (engine.common.errors,
engine.net.errors) whose message is one line naming what and where (the file read, or the
API of the frame). Anything else raises ``BadRejection`` or the decoder's own exception,
and the fuzzer reports it as a finding. The file formats are written to a real file and
read through the same public reader the tools use.
"""

from __future__ import annotations

import functools
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from engine.common.errors import MetadataError
from engine.records import compression
from engine.records.kio_codec import crc32c

MAX_INPUT_BYTES = 64 * 1024  # larger fuzz inputs are cut: the decoders' cost is per byte


class BadRejection(Exception):
    """A documented error type whose message breaks the one-line, what-and-where promise."""


@dataclass(frozen=True)
class FuzzTarget:
    name: str
    description: str
    run: Callable[[bytes], None]
    # lines for the report once a run ends (the served targets: cases, memory, tasks)
    summary: Callable[[], list[str]] | None = None


def check_rejection(err: MetadataError, where: str) -> None:
    """One line, naming ``where`` (the file or the API)."""
    text = str(err)
    if "\n" in text or "\r" in text:
        raise BadRejection(f"{type(err).__name__} over several lines: {text[:200]!r}")
    if where not in text:
        raise BadRejection(f"{type(err).__name__} does not name {where}: {text[:200]!r}")


def _rejects(where: str, work: Callable[[], Any]) -> None:
    try:
        work()
    except MetadataError as err:
        check_rejection(err, where)


@functools.lru_cache(maxsize=None)
def _workdir() -> Path:
    # one directory per process, its files overwritten by every input (the readers want real files)
    return Path(tempfile.mkdtemp(prefix="kraftd-fuzz-"))


def _write(name: str, data: bytes) -> Path:
    path = _workdir() / name
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------- record batches and records

def fuzz_record_batch(data: bytes) -> None:
    """A segment file: the strict reader, the torn-tail tolerant reader, the recovery scan and
    ``kraftd dump-log``."""
    from engine.storage.log_reader import read_file
    from engine.storage.log_segment import scan_segment

    path = _write("00000000000000000000.log", data)
    where = str(path)
    _rejects(where, lambda: list(read_file(path)))
    _rejects(where, lambda: list(read_file(path, on_torn_tail=lambda pos, err: check_rejection(err, where))))
    _rejects(where, lambda: scan_segment(data, where))
    _rejects(where, lambda: _dump_log(path))


def _dump_log(path: Path) -> None:
    from engine.admin.log_dump import dump_files

    dump_files([str(path)], _discard, _discard)


def _discard(line: str) -> None:
    pass


def records_batch_bytes(data: bytes) -> bytes:
    """A CRC-valid batch around fuzzed records, so that the fuzzer's bytes reach record decoding.

    data[0]: bits 0-2 the codec, bit 5 control, bit 7 "compress the records here" (else the
    fuzzed bytes are the compressed section as is); data[1:3]: the record count; the rest:
    the records section.
    """
    head, records = data[:3].ljust(3, b"\0"), data[3:]
    codec = head[0] & 0x07
    if head[0] & 0x80 and codec in compression.CODEC_NAMES:
        records = compression.compress(codec, records)
    attributes = head[0] & 0x27
    count = int.from_bytes(head[1:3], "big")
    body = struct.pack(">bIhiqqqhii", 2, 0, attributes, max(count - 1, 0), 1_700_000_000_000,
                       1_700_000_000_000, -1, -1, -1, count) + records
    after_crc = body[5:]
    body = body[:1] + struct.pack(">I", crc32c(after_crc)) + after_crc
    return struct.pack(">qii", 100, 4 + len(body), 3) + body


def fuzz_records(data: bytes) -> None:
    """Records of one batch: the replay's fast path and the general decoder must agree, and
    dump-log prints them."""
    from engine.records.record_batch import decode_batch
    from engine.storage.log_reader import batches_of_bytes, entries_of_batch
    from engine.admin.log_dump import record_lines

    buf = records_batch_bytes(data)
    where = "fuzzed records batch"
    fast: list = []
    try:
        fast = [entries for _, entries in batches_of_bytes(buf, where, None, False)]
    except MetadataError as err:
        check_rejection(err, where)
    try:
        batch, _ = decode_batch(buf)
        general = list(entries_of_batch(batch))
    except MetadataError as err:
        if fast:
            raise BadRejection(f"the replay read the batch, decode_batch refused it: {err}") from None
        return
    if fast and fast[0] != general:
        raise BadRejection("the replay's fast path and decode_batch read different records")
    for skip_record_metadata in (False, True):
        for _ in record_lines(batch, skip_record_metadata):
            pass


# ---------------------------------------------------------------- snapshots and small files

def fuzz_snapshot(data: bytes) -> None:
    """A snapshot file loaded into an image, as ``metashell --snapshot`` does, and dumped."""
    from engine.image.metadata_loader import load_snapshot

    path = _write("00000000000000000100-0000000001.checkpoint", data)
    _rejects(str(path), lambda: load_snapshot(path))
    _rejects(str(path), lambda: _dump_log(path))


def fuzz_bootstrap_checkpoint(data: bytes) -> None:
    """``bootstrap.checkpoint`` read as a starting controller reads it."""
    from engine.server.controller_server import read_bootstrap_records
    from engine.storage.snapshot_writer import BOOTSTRAP_FILE_NAME

    path = _write(BOOTSTRAP_FILE_NAME, data)
    _rejects(str(path), lambda: read_bootstrap_records(path.parent))


def fuzz_quorum_state(data: bytes) -> None:
    from engine.storage.quorum_state_file import QUORUM_STATE_FILE, read_quorum_state

    path = _write(QUORUM_STATE_FILE, data)
    _rejects(str(path), lambda: read_quorum_state(path))


def fuzz_meta_properties(data: bytes) -> None:
    from engine.storage.meta_properties import META_PROPERTIES_FILE, read_meta_properties

    path = _write(META_PROPERTIES_FILE, data)
    _rejects(str(path), lambda: read_meta_properties(path))


# ---------------------------------------------------------------- frames

@functools.lru_cache(maxsize=None)
def listener_tables() -> dict[str, dict[int, Any]]:
    """The API tables our listeners serve: the controller's (Raft's, the commands', Envelope) and
    the simulated broker's (its own answers, what it forwards, DescribeLogDirs)."""
    from engine.broker.broker_apis import LOCAL_APIS, LOG_DIRS_API
    from engine.broker.forwarding import forwarded_apis
    from engine.controller.commands import all_commands
    from engine.server.controller_apis import controller_listener_apis

    controller = controller_listener_apis(all_commands())
    broker = {**LOCAL_APIS, **forwarded_apis(), LOG_DIRS_API.api_key: LOG_DIRS_API}
    return {"controller": controller, "broker": broker}


@functools.lru_cache(maxsize=None)
def served_versions() -> tuple[tuple[str, int, int], ...]:
    """Every (listener, api key, version) served, in a fixed order the fuzzer's first bytes index."""
    return tuple((listener, key, version) for listener, table in sorted(listener_tables().items())
                 for key, spec in sorted(table.items()) for version in range(spec.min_version, spec.max_version + 1))


def frame_choice(data: bytes) -> tuple[str, int, int, bytes]:
    """(listener, api key, version, the rest) from fuzzed bytes: data[0:2] indexes the served
    API versions (0xFFFF: the frame as fuzzed, an API or version we may not serve)."""
    index = int.from_bytes(data[:2].ljust(2, b"\0"), "big")
    rest = data[2:]
    if index == 0xFFFF:
        key, version = struct.unpack(">hh", rest[:4]) if len(rest) >= 4 else (-1, -1)
        return ("controller" if len(rest) % 2 else "broker"), key, version, rest
    choices = served_versions()
    return choices[index % len(choices)] + (rest,)


def _where(key: int, version: int, table: dict[int, Any]) -> str:
    from engine.net.kafka_protocol import api_name

    return f"{table[key].name if key in table else api_name(key)} v{version}"


def fuzz_request_frame(data: bytes) -> None:
    """A request frame read by our listeners as kafka_server reads it, then what the controller
    does with what it read: an older version converted up to the core's, an Envelope's inner
    frame and principal read."""
    from engine.net.kafka_protocol import decode_request_frame

    listener, key, version, rest = frame_choice(data)
    frame = rest if data[:2] == b"\xff\xff" else struct.pack(">hh", key, version) + rest
    table = listener_tables()[listener]
    try:
        info, request = decode_request_frame(frame, table)
    except MetadataError as err:
        check_rejection(err, "" if len(frame) < 8 else _where(key, version, table))
        return
    if listener == "controller":
        _controller_reads(info.api_key, info.api_version, request)


def _controller_reads(key: int, version: int, request: Any) -> None:
    from engine.controller.commands import all_commands
    from engine.net.kafka_protocol import request_class
    from engine.net.message_versions import convert_message
    from engine.common.api_keys import ApiKeys
    from engine.server.controller_apis import EnvelopeRefused, forwardable_apis, read_envelope
    from engine.server.request_upgrades import upgrade_fields

    command = all_commands().get(key)
    if command is not None and version != command.max_version:
        convert_message(request, request_class(key, command.max_version), upgrade_fields(key, version, request))
    if key != ApiKeys.ENVELOPE:
        return
    forwardable = forwardable_apis(listener_tables()["controller"], all_commands())
    try:  # what ControllerApis._envelope does; a refusal is the Envelope's error code
        _, _, inner_info, inner = read_envelope(request, forwardable)
    except EnvelopeRefused:
        return
    _controller_reads(inner_info.api_key, inner_info.api_version, inner)


def fuzz_response_frame(data: bytes) -> None:
    """A response frame as our clients read it (Raft peers, the broker's forwarding, the tools),
    for every API version our listeners serve."""
    from engine.net.kafka_protocol import decode_response_frame

    listener, key, version, frame = frame_choice(data)
    if key < 0:
        return  # too short to name an API
    _rejects(_where(key, version, listener_tables()[listener]).split(" ")[0],
             lambda: decode_response_frame(frame, key, version))


def _served(listener: str) -> Callable[[bytes], None]:
    def run(data: bytes) -> None:
        from engine.fuzz.served_targets import serve_case

        serve_case(listener, data)

    run.__name__ = f"fuzz_served_{listener}"
    return run


def _served_summary() -> list[str]:
    from engine.fuzz.served_targets import served_summary

    return served_summary()


TARGETS: dict[str, FuzzTarget] = {t.name: t for t in (
    FuzzTarget("record-batch", "a metadata log segment (.log): record batches read strictly, "
               "with torn-tail recovery, and scanned", fuzz_record_batch),
    FuzzTarget("records", "the records section of one CRC-valid batch (any codec, data or control): "
               "record and metadata record decoding, fast path against general", fuzz_records),
    FuzzTarget("snapshot", "a .checkpoint snapshot file loaded into a metadata image", fuzz_snapshot),
    FuzzTarget("bootstrap-checkpoint", "bootstrap.checkpoint read as a controller starts", fuzz_bootstrap_checkpoint),
    FuzzTarget("quorum-state", "the Raft quorum-state file", fuzz_quorum_state),
    FuzzTarget("meta-properties", "a log directory's meta.properties", fuzz_meta_properties),
    FuzzTarget("request-frame", "request frames of every API version the controller and simulated broker "
               "listeners serve (Envelope's inner frame too)", fuzz_request_frame),
    FuzzTarget("response-frame", "response frames of those APIs, as our clients read them", fuzz_response_frame),
    FuzzTarget("served-controller", "one connection's bytes to a live controller listener in this process: it "
               "answers or closes, and still serves ApiVersions and DescribeQuorum", _served("controller"),
               _served_summary),
    FuzzTarget("served-broker", "one connection's bytes to a live simulated broker's listener in this process: it "
               "answers or closes, and still serves ApiVersions and Metadata", _served("broker"), _served_summary),
)}
