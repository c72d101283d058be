"""Apache Kafka's ``kafka-metadata-shell`` on one file, as paths and fields (for the comparison
in test_kafka_metadata_shell.py).

The shell runs interactive, through pipes: its prompt (``>> ``) ends each answer, so one JVM
answers every question about a file. Its ``tree`` prints a subtree with every leaf's text;
``parse_tree`` reads that back into paths and texts, and ``parse_java`` reads the texts that are
Java objects' ``toString()`` into fields.

What the shell does that shapes this: it waits only for a first offset before it answers (so the
provenance is asked until it shows the file's last data batch); it reads any file as a log and
skips control batches; it takes a lock two directories above the file (so files are copied out
of the nodes' directories first, and cut after their last data batch: see ``shell_copy``); Kafka
4.1 lists /image/features/zkMigrationState without a node behind it, and a quota entity of
default parts only gets the empty name, which no path opens — ``tree`` and ``find`` end the
shell there, so those two directories are read name by name.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from engine.storage.log_reader import read_batch_headers

PROMPT = ">> "
SHELL_TIMEOUT_S = 180.0


# -- Kafka's toString(), as fields ----------------------------------------------------------

class _JavaText:
    """A recursive reader of the toString() forms Kafka's image nodes print: ``Name(k=v, ...)``
    and records' ``Name[k=v, ...]``, ``[a, b]``, ``{k: v}``, ``'text'``, ``Optional[x]``,
    ``Optional.empty``, and bare words (kept as text; ``null`` is None)."""

    STRUCT = re.compile(r"([A-Za-z][A-Za-z0-9]*)([(\[])(?=[A-Za-z][A-Za-z0-9]*=|[)\]])")

    def __init__(self, text: str):
        self.text, self.pos = text, 0

    def value(self) -> Any:
        text, pos = self.text, self.pos
        if text.startswith("Optional.empty", pos):
            self.pos += len("Optional.empty")
            return None
        if text.startswith("Optional[", pos):
            self.pos += len("Optional[")
            inner = self.value()
            self._expect("]")
            return inner
        struct = self.STRUCT.match(text, pos)
        if struct:
            self.pos = struct.end()
            close = ")" if struct.group(2) == "(" else "]"
            fields = {"__type__": struct.group(1)}
            for key, value in self._items(close, "="):
                fields[key] = value
            return fields
        if text.startswith("[", pos):
            self.pos += 1
            return [v for _, v in self._items("]", None)]
        if text.startswith("{", pos):
            self.pos += 1
            return dict(self._items("}", ": "))
        if text.startswith("'", pos):
            end = text.index("'", pos + 1)
            self.pos = end + 1
            return text[pos + 1:end]
        end = pos
        while end < len(text) and text[end] not in ",)]}":
            end += 1
        self.pos = end
        word = text[pos:end]
        return None if word == "null" else word

    def _items(self, close: str, separator: str | None):
        if self.text.startswith(close, self.pos):
            self.pos += 1
            return
        while True:
            key = None
            if separator is not None:
                end = self.text.index(separator, self.pos)
                key, self.pos = self.text[self.pos:end], end + len(separator)
            yield key, self.value()
            if self.text.startswith(", ", self.pos):
                self.pos += 2
                continue
            self._expect(close)
            return

    def _expect(self, token: str) -> None:
        if not self.text.startswith(token, self.pos):
            raise ValueError(f"expected {token!r} at {self.pos} of {self.text!r}")
        self.pos += len(token)


def parse_java(text: str) -> Any:
    reader = _JavaText(text)
    value = reader.value()
    if reader.pos != len(text):
        raise ValueError(f"text left after {reader.pos} of {text!r}")
    return value


# -- Kafka's tree of one file -------------------------------------------------------------------

@dataclass
class KafkaTree:
    paths: set[str]  # every node Kafka lists under /image and can open
    leaves: dict[str, str]  # leaf path -> the text its cat prints
    unreachable: set[str]  # listed, but Kafka's shell cannot open them
    provenance: tuple[int, int, int]  # offset, epoch, time (ms), as Kafka's shell loaded the file


def last_batches(path: Path) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(last offset, leader epoch, max timestamp) of the file's last data batch, and of its last
    batch of any kind: Kafka's shell skips control batches, a broker's loader does not."""
    last = last_data = None
    for _, header in read_batch_headers(path):
        last = header
        if not header.is_control:
            last_data = header
    assert last_data is not None, f"{path}: no data batch"
    return tuple((b.last_offset, b.partition_leader_epoch, b.max_timestamp) for b in (last_data, last))


def shell_copy(path: Path, into: Path) -> Path:
    """The file as Kafka's shell is given it: a copy (the shell locks the directory two levels
    up, which must not be a node's), cut after its last data batch.

    Why cut: the shell's loader counts itself caught up only when its last data offset is at
    least the file's last offset minus one, and it learns that last offset only after reading
    everything. A file ending in two control offsets or more (two leader changes in a row, as
    a quorum stopping together can write) leaves Kafka 4.1's shell at "Loading..." forever.
    The shell skips control batches anyway, so its /image is the same without them."""
    end = max(pos + header.size_bytes for pos, header in read_batch_headers(path) if not header.is_control)
    copy = into / path.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_bytes(path.read_bytes()[:end])
    return copy


def log_until(metadata_dir: Path, end_offset: int, into: Path) -> Path:
    """A node's segments from offset 0 as one file (Kafka's shell reads one file), cut before
    ``end_offset`` (a high watermark: what every voter holds the same). The batches past it may
    differ from node to node, or be torn in a node killed mid-write, and are never read."""
    segments = sorted(metadata_dir.glob("*.log"))
    assert segments and segments[0].name == f"{0:020d}.log", f"{metadata_dir}: the log does not start at 0"
    whole = into / "whole.log"
    into.mkdir(parents=True, exist_ok=True)
    whole.write_bytes(b"".join(s.read_bytes() for s in segments))
    end = 0
    for pos, header in read_batch_headers(whole):
        if header.base_offset >= end_offset:
            break
        assert header.last_offset < end_offset, f"{metadata_dir}: a batch across offset {end_offset}"
        end = pos + header.size_bytes
    cut = into / segments[0].name
    cut.write_bytes(whole.read_bytes()[:end])
    whole.unlink()
    return cut


def provenance_of(text: str) -> tuple[int, int, int]:
    match = re.fullmatch(r"offset (-?\d+), epoch (-?\d+), time (\S+?)(\[UTC\])?", text.strip())
    assert match, f"kafka-metadata-shell's provenance unreadable: {text!r}"
    moment = datetime.fromisoformat(match.group(3).replace("Z", "+00:00"))
    return int(match.group(1)), int(match.group(2)), round(moment.timestamp() * 1000)


class ShellSilent(AssertionError):
    """Kafka's shell gave no prompt before its deadline."""


class _Shell:
    """An interactive kafka-metadata-shell over one file, through pipes: its prompt ends each answer."""

    def __init__(self, dist, path: Path, errors: Path, banner_timeout_s: float = SHELL_TIMEOUT_S):
        self.errors = errors.open("w")
        self.process = subprocess.Popen(dist.command("kafka-metadata-shell", "--snapshot", str(path)),
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors)
        self.buffer = b""
        self.deadline = time.monotonic() + banner_timeout_s
        try:
            self.read_answer()  # the banner
        except BaseException:
            self.close()  # never leave a JVM behind a failed start
            raise
        self.deadline = time.monotonic() + SHELL_TIMEOUT_S

    def read_answer(self) -> str:
        fd = self.process.stdout.fileno()
        while (at := self.buffer.find(PROMPT.encode())) < 0:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise ShellSilent(f"kafka-metadata-shell gave no prompt in time ({self.buffer[-200:]!r})")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise AssertionError(f"kafka-metadata-shell ended early: {self.buffer[-2000:]!r}")
            self.buffer += chunk
        answer, self.buffer = self.buffer[:at], self.buffer[at + len(PROMPT):]
        return answer.decode()

    def ask(self, command: str, raw: bool = False) -> str:
        """The answer to one command (without its last line end, unless ``raw``)."""
        self.process.stdin.write(command.encode() + b"\n")
        self.process.stdin.flush()
        answer = self.read_answer()
        return answer if raw else answer.removesuffix("\n")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.errors.close()


BANNER_TIMEOUT_S = 60.0
SHELL_STARTS = 3


def _start_shell(dist, path: Path, errors: Path) -> "_Shell":
    """A shell that answered its banner. Kafka's shell answers once its loader has applied an
    offset above 0 and sleeps until then; now and then (seen with 4.1.2 on a busy machine) that
    never happens, and a fresh JVM on the same file answers at once. So a start is retried."""
    for attempt in range(1, SHELL_STARTS + 1):
        try:
            return _Shell(dist, path, errors, banner_timeout_s=BANNER_TIMEOUT_S)
        except ShellSilent:
            if attempt == SHELL_STARTS:
                raise
    raise AssertionError("unreachable")


def parse_tree(base: str, text: str) -> tuple[set[str], dict[str, str]]:
    """The paths and leaf texts in what Kafka's ``tree BASE`` prints: a node is ``name:`` indented
    two spaces per level below BASE, a leaf's text is on the lines two spaces deeper."""
    paths, leaves, stack = set(), {}, [base]  # stack[d]: the node at depth d - 1 below base
    for line in text.removesuffix("\n").split("\n") if text else []:
        depth, rest = divmod(len(line) - len(line.lstrip(" ")), 2)
        content = line.strip(" ")
        if not rest and content.endswith(":") and depth < len(stack):
            del stack[depth + 1:]
            stack.append(f"{stack[depth]}/{content[:-1]}")
            paths.add(stack[-1])
        elif not rest and depth == len(stack) - 1 and depth > 0:
            parent = stack[depth]
            leaves[parent] = content if parent not in leaves else f"{leaves[parent]}\n{content}"
        else:
            raise ValueError(f"a line of Kafka's tree {base} out of place: {line!r}")
    return paths, leaves


def _lines(answer: str) -> list[str]:
    """The lines of an answer (an empty name is an empty line; no line at all is no name)."""
    return answer.split("\n")[:-1]


def _add_tree(shell: "_Shell", top: str, paths: set[str], leaves: dict[str, str]) -> None:
    found_paths, found_leaves = parse_tree(top, shell.ask(f"tree '{top}'"))
    paths.update(found_paths)
    leaves.update(found_leaves)


def kafka_tree(dist, path: Path, scratch: Path) -> KafkaTree:
    """Kafka's /image of one file, in one JVM: every path it lists, and every leaf's text.

    The shell starts answering before its loader has read the whole file (it waits only for a
    first offset), so ``/image/provenance`` is asked until it shows the file's last data batch."""
    copy = shell_copy(path, scratch / "files")
    expected = last_batches(copy)[0]
    shell = _start_shell(dist, copy, scratch / "kafka-shell.err")
    try:
        while (provenance := provenance_of(text := shell.ask("cat /image/provenance")))[0] < expected[0]:
            assert time.monotonic() < shell.deadline, f"Kafka's shell never loaded {path}: {provenance}"
        paths, leaves = {"/image", "/image/provenance"}, {"/image/provenance": text}
        for top in (f"/image/{name}" for name in _lines(shell.ask("ls /image", raw=True))):
            paths.add(top)
            # Kafka 4.1 lists /image/features/zkMigrationState without a node behind it, and a
            # quota entity of default parts only has the empty name, which no path opens: `tree`
            # (and `find`) end the shell there, so these two are listed and read name by name.
            if top == "/image/features":
                for name in _lines(shell.ask(f"ls {top}", raw=True)):
                    paths.add(f"{top}/{name}")
                    leaves[f"{top}/{name}"] = shell.ask(f"cat '{top}/{name}'")
            elif top == "/image/clientQuotas":
                for name in _lines(shell.ask(f"ls {top}", raw=True)):
                    paths.add(f"{top}/{name}")
                    if name:
                        _add_tree(shell, f"{top}/{name}", paths, leaves)
            elif top != "/image/provenance":
                _add_tree(shell, top, paths, leaves)
    finally:
        shell.close()
    unreachable = {p for p in paths if p.endswith("/") or leaves.get(p, "").endswith(": No such file or directory.")}
    return KafkaTree(paths - unreachable, {p: t for p, t in leaves.items() if p not in unreachable}, unreachable,
                     provenance)
