"""Bad input to the real ``kraftd`` console script: one line on stderr, exit code 1, never a traceback.

Every case runs ``python -m engine.tools.cli`` as a subprocess (stdin closed), so what is
checked is exactly what a user sees: the exit code, and that stderr is a single line
``kraftd: <file>, byte offset <N>: <reason>`` naming the file, the byte offset where
there is one, and the reason.
"""

from __future__ import annotations

import base64
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from engine.records.metadata_record_serde import encode_metadata_value
from engine.records.metadata_records import NoOpRecordV0
from engine.records.record_batch import HEADER_SIZE, build_batch, decode_batch, encode_batch
from tests.conftest import corpus_file

SEGMENT = ("hiage__kafka-raft", "kafka1", "__cluster_metadata-0", "00000000000000000000.log")  # in the corpus
SEGMENT_NAME = "00000000000000000000.log"


# ---------------------------------------------------------------------------------------------
# helpers


def run_kraftd(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    """Run the console script as a user would, with stdin closed."""
    return subprocess.run([sys.executable, "-m", "engine.tools.cli", *map(str, args)], cwd=cwd,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


@pytest.fixture
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh working directory for each test's subprocesses (kraftd writes nothing there: see
    test_no_hypothesis_dir_in_cwd), apart from the tmp_path holding its files."""
    return tmp_path_factory.mktemp("kraftd-cwd")


@pytest.fixture
def kraftd(workdir: Path):
    def call(*args: str | Path) -> subprocess.CompletedProcess:
        return run_kraftd(*args, cwd=workdir)
    return call


def assert_one_line_error(proc: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit 1; stderr is exactly one line, ``kraftd: ...``, holding every fragment; no traceback."""
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert proc.stderr.endswith("\n") and proc.stderr.count("\n") == 1, repr(proc.stderr)
    line = proc.stderr.rstrip("\n")
    assert line.startswith("kraftd: "), line
    for fragment in fragments:
        assert fragment in line, f"{fragment!r} not in {line!r}"
    return line


def batch_extents(buf: bytes) -> list[tuple[int, int]]:
    """(start, end) byte positions of every batch, found with the engine's own decoder."""
    extents, pos = [], 0
    while pos < len(buf):
        _, end = decode_batch(buf, pos)
        extents.append((pos, end))
        pos = end
    return extents


@pytest.fixture(scope="module")
def segment_bytes() -> bytes:
    return corpus_file(*SEGMENT).read_bytes()


@pytest.fixture(scope="module")
def extents(segment_bytes: bytes) -> list[tuple[int, int]]:
    found = batch_extents(segment_bytes)
    assert len(found) > 10  # the damage cases below need batches before and after the damaged one
    return found


def write_damaged(tmp_path: Path, data: bytes | bytearray) -> Path:
    path = tmp_path / SEGMENT_NAME
    path.write_bytes(bytes(data))
    return path


# ---------------------------------------------------------------------------------------------
# dump-log: damaged or missing files


def test_empty_file(kraftd, tmp_path: Path) -> None:
    path = write_damaged(tmp_path, b"")
    assert_one_line_error(kraftd("dump-log", path), str(path), "byte offset 0", "empty")


@pytest.mark.corpus
def test_truncated_inside_third_batch(kraftd, tmp_path: Path, segment_bytes: bytes, extents) -> None:
    start, end = extents[2]
    cut = start + (end - start) // 2  # K bytes, K inside the 3rd batch
    path = write_damaged(tmp_path, segment_bytes[:cut])
    proc = kraftd("dump-log", path)
    line = assert_one_line_error(proc, str(path), f"byte offset {start}:", "truncated")
    assert f"{cut - start} remain" in line
    # the two whole batches before the cut were printed before the error
    assert proc.stdout.count("\nbaseOffset: ") == 2


MIDDLE = 5  # a batch in the middle: batches before and after it


@pytest.mark.corpus
@pytest.mark.parametrize(("index", "where"), [(1, HEADER_SIZE + 3), (1, 18), (MIDDLE, 21), (MIDDLE, -1)],
                         ids=["batch1-records", "batch1-crc-field", "middle-attributes", "middle-last-byte"])
@pytest.mark.slow
def test_flipped_byte_is_a_crc_mismatch_at_batch_start(kraftd, tmp_path: Path, segment_bytes: bytes, extents,
                                                       index: int, where: int) -> None:
    assert 0 < index < len(extents) - 1  # NOT the last batch, so not a torn tail
    start, end = extents[index]
    data = bytearray(segment_bytes)
    data[start + where if where >= 0 else end + where] ^= 0x5A
    path = write_damaged(tmp_path, data)
    proc = kraftd("dump-log", path)
    line = assert_one_line_error(proc, str(path), f"byte offset {start}:", "CRC mismatch")
    # as kafka-dump-log: the damaged batch is printed with isvalid: false and the dump goes on past it,
    # unless its records do not parse (Kafka's tool fails there too, after the batch's line)
    valid = [b.endswith("isvalid: true") for b in proc.stdout.splitlines() if b.startswith("baseOffset: ")]
    printed = index + 1 if "records do not parse" in line else len(extents)
    assert valid == [i != index for i in range(printed)]


@pytest.mark.corpus
@pytest.mark.parametrize("length", [0x7FFFFFFF, -5])
def test_absurd_batch_length(kraftd, tmp_path: Path, segment_bytes: bytes, extents, length: int) -> None:
    start, _ = extents[MIDDLE]
    data = bytearray(segment_bytes)
    data[start + 8:start + 12] = struct.pack(">i", length)
    path = write_damaged(tmp_path, data)
    assert_one_line_error(kraftd("dump-log", path), str(path), f"byte offset {start}:",
                          "batch length", str(length))


@pytest.mark.corpus
def test_wrong_magic(kraftd, tmp_path: Path, segment_bytes: bytes, extents) -> None:
    start, _ = extents[MIDDLE]
    data = bytearray(segment_bytes)
    data[start + 16] = 1
    path = write_damaged(tmp_path, data)
    # the offset named is the magic byte itself (batch start + 16), where the damage is
    assert_one_line_error(kraftd("dump-log", path), str(path), f"byte offset {start + 16}:",
                          "magic 1")


def test_nonexistent_file(kraftd, tmp_path: Path) -> None:
    path = tmp_path / "no" / "such" / SEGMENT_NAME
    assert_one_line_error(kraftd("dump-log", path), str(path), "no such file")


def test_empty_directory_is_not_a_metadata_dir(kraftd, tmp_path: Path) -> None:
    directory = tmp_path / "empty"
    directory.mkdir()
    assert_one_line_error(kraftd("dump-log", directory), str(directory),
                          "not a metadata log directory")


def test_directory_of_random_files_is_not_a_metadata_dir(kraftd, tmp_path: Path) -> None:
    directory = tmp_path / "random"
    directory.mkdir()
    (directory / "notes.txt").write_text("hello\n")
    (directory / "blob.bin").write_bytes(bytes(range(256)) * 3)
    (directory / "00000000000000000000.index").write_bytes(b"\0" * 16)
    (directory / "bootstrap.checkpoint.part").write_bytes(b"\0" * 16)
    assert_one_line_error(kraftd("dump-log", directory), str(directory),
                          "not a metadata log directory")


def test_unknown_record_type_is_shown_then_reported(kraftd, tmp_path: Path) -> None:
    """Never dropped, never fatal to the dump: every record is printed, the unknown one raw;
    then one line names it (file, byte offset of its batch, offset, reason) and the exit is 1."""
    unknown = b"\x01\x63\x00" + b"\x00\x07\xfe\xff"  # frame 1, api key 99, version 0, then bytes
    known = encode_metadata_value(NoOpRecordV0())
    batch = build_batch(0, [(None, known), (None, unknown), (None, known)], timestamp_ms=1_700_000_000_000,
                        leader_epoch=1)
    path = tmp_path / SEGMENT_NAME
    path.write_bytes(encode_batch(batch))
    proc = kraftd("dump-log", path)
    assert_one_line_error(proc, str(path), "byte offset 0", "record at offset 1 shown raw",
                          "unknown record type (api key 99, version 0)")
    records = [line for line in proc.stdout.splitlines() if line.startswith("| offset: ")]
    assert len(records) == 3
    assert records[0].endswith('payload: {"type":"NO_OP_RECORD","version":0,"data":{}}')
    assert records[2].endswith('payload: {"type":"NO_OP_RECORD","version":0,"data":{}}')
    line = records[1]
    assert line.startswith(f"| offset: 1 CreateTime: 1700000000000 keySize: -1 valueSize: {len(unknown)} ")
    assert '"type":"UNKNOWN_RECORD(99)"' in line
    assert '"apiKey":99' in line
    assert "unknown record type" in line
    assert f'"value":"{base64.b64encode(unknown).decode()}"' in line


# ---------------------------------------------------------------------------------------------
# bad commands


def test_unknown_command(kraftd) -> None:
    assert_one_line_error(kraftd("nosuchcmd"), "nosuchcmd")


def test_dump_log_without_files(kraftd) -> None:
    assert_one_line_error(kraftd("dump-log"), "required", "files")


CLUSTER_ID = "5L6g3nShT-eMCtK--X86sw"


def write_config(tmp_path: Path, *, node_id: bool = True) -> Path:
    lines = [
        "process.roles=controller",
        "node.id=1" if node_id else "",
        "listeners=CONTROLLER://localhost:19093",
        "controller.listener.names=CONTROLLER",
        "controller.quorum.bootstrap.servers=localhost:19093",
        f"metadata.log.dir={tmp_path / 'meta'}",
        f"log.dirs={tmp_path / 'data'}",
    ]
    path = tmp_path / "controller.properties"
    path.write_text("\n".join(line for line in lines if line) + "\n")
    return path


def test_format_with_missing_config(kraftd, tmp_path: Path) -> None:
    missing = tmp_path / "nope.properties"
    assert_one_line_error(kraftd("storage", "format", "--config", missing, "--cluster-id", CLUSTER_ID,
                                 "--standalone"), str(missing), "no such file")


def test_format_with_config_lacking_node_id(kraftd, tmp_path: Path) -> None:
    config = write_config(tmp_path, node_id=False)
    assert_one_line_error(kraftd("storage", "format", "--config", config, "--cluster-id", CLUSTER_ID,
                                 "--standalone"), str(config), "node.id")
    assert not (tmp_path / "meta").exists()


@pytest.mark.parametrize("cluster_id", ["not-a-uuid", "5L6g3nShT-eMCtK--X86s!"])
def test_format_with_bad_cluster_id(kraftd, tmp_path: Path, cluster_id: str) -> None:
    config = write_config(tmp_path)
    assert_one_line_error(kraftd("storage", "format", "--config", config, "--cluster-id", cluster_id,
                                 "--standalone"), "cluster-id", cluster_id[:10])
    assert not (tmp_path / "meta").exists()


def test_format_with_unknown_release_version(kraftd, tmp_path: Path) -> None:
    config = write_config(tmp_path)
    assert_one_line_error(kraftd("storage", "format", "--config", config, "--cluster-id", CLUSTER_ID,
                                 "--standalone", "--release-version", "9.9"),
                          "release version", "9.9")
    assert not (tmp_path / "meta").exists()


def _info_on_unformatted(kraftd, tmp_path: Path) -> subprocess.CompletedProcess:
    config = write_config(tmp_path)
    (tmp_path / "meta").mkdir()
    (tmp_path / "data").mkdir()
    return kraftd("storage", "info", "--config", config)


def test_storage_info_on_directory_lacking_meta_properties(kraftd, tmp_path: Path) -> None:
    proc = _info_on_unformatted(kraftd, tmp_path)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "Found problems:" in proc.stdout
    for name in ("meta", "data"):
        assert f"no meta.properties in {tmp_path / name}" in proc.stdout


def test_storage_info_problem_is_one_line_on_stderr(kraftd, tmp_path: Path) -> None:
    assert_one_line_error(_info_on_unformatted(kraftd, tmp_path), "meta.properties")


def test_random_uuid_subprocess(kraftd) -> None:
    """The one good command here: the console script itself starts and exits 0."""
    proc = kraftd("storage", "random-uuid")
    assert proc.returncode == 0 and proc.stderr == ""
    assert len(proc.stdout.strip()) == 22


def test_no_hypothesis_dir_in_cwd(tmp_path: Path) -> None:
    pytest.importorskip("hypothesis")  # the side effect exists only where hypothesis is installed
    segment = tmp_path / SEGMENT_NAME
    segment.write_bytes(encode_batch(build_batch(0, [(None, encode_metadata_value(NoOpRecordV0()))],
                                                 timestamp_ms=0, leader_epoch=0)))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    proc = run_kraftd("dump-log", segment, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    assert list(cwd.iterdir()) == []
