"""The shell: commands by captured output, completion as a table, one-shot modes, and the
interactive prompt driven through a pseudo-terminal."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from metashell.demo.shell_demo import write_demo_log_dir
from metashell.shell.commands import COMMANDS
from metashell.shell.completion import complete
from metashell.shell.session import Session
from metashell.source import Source


@pytest.fixture()
def session(tmp_path: Path):
    lines: list[str] = []
    s = Session(Source(log_dir=write_demo_log_dir(tmp_path)), out=lines.append)
    s.load()
    s.lines = lines
    return s


def run(session: Session, line: str) -> list[str]:
    session.lines.clear()
    session.run_line(line)
    return list(session.lines)


def test_navigation_and_listing(session: Session) -> None:
    assert run(session, "cd /topics/orders; pwd") == ["/topics/orders"]
    assert run(session, "ls") == ["0", "1", "2", "configs", "id", "name"]
    assert run(session, "cd ..; cd ../brokers/2; cat state") == ["active"]
    assert run(session, "ls -l /brokers/1")[-1] == "-  state  active"
    assert run(session, "ls /brokers /features") == ["/brokers:", "1", "2", "3", "", "/features:", "metadata.version"]
    assert run(session, "cat /brokers/*/rack") == ["==> /brokers/1/rack <==", "rack-1", "",
                                                   "==> /brokers/2/rack <==", "rack-0", "",
                                                   "==> /brokers/3/rack <==", "rack-1"]


def test_find_tree_man_help_history(session: Session) -> None:
    assert run(session, "find /topics -name 1") == ["/topics/orders/1"]
    assert run(session, "find /brokers -type d") == ["/brokers", "/brokers/1", "/brokers/2", "/brokers/3"]
    assert run(session, "tree /topics -d 1") == ["/topics", "└── orders/"]
    assert run(session, "man cat")[0].startswith("cat — print files")
    assert [line.split()[0] for line in run(session, "help")] == sorted(COMMANDS)
    assert run(session, "history")[-1].endswith("history")


def test_errors_are_one_line_and_the_shell_goes_on(session: Session) -> None:
    cases = {"nosuch": "metashell: unknown command: nosuch (try: help)",
             "cat /nope": "metashell: cat: /nope: no such node",
             "cd /producer-ids": "metashell: cd: /producer-ids: not a directory",
             "cat /brokers": "metashell: cat: /brokers: is a directory",
             "ls --bogus": "metashell: ls: unrecognized arguments: --bogus",
             "cat /topics/zz*": "metashell: cat: /topics/zz*: no match",
             "seek soon": "metashell: seek: soon: expected an offset, 'latest' or --time TIME"}
    for line, expected in cases.items():
        assert run(session, line) == [expected], line
    assert session.run_line("pwd; cat /nope; pwd") == 1  # any failure fails the line, for scripts
    assert run(session, "pwd") == ["/"]


def test_time_travel_changes_every_view(session: Session) -> None:
    assert run(session, "cat /brokers/2/state") == ["active"]
    run(session, "seek 18")  # broker 2 fenced at offset 18
    assert run(session, "cat /brokers/2/state") == ["fenced"]
    assert '"isr": [' in "\n".join(run(session, "cat /topics/orders/0"))
    assert run(session, "cat /quorum/leader") == ["1"]
    run(session, "seek latest")
    assert run(session, "cat /quorum/leader; cat /brokers/2/state") == ["3", "active"]
    run(session, "seek --time 1767225606000")
    assert run(session, "cat /local/last-offset") == ["18"]


def test_summary_and_records(session: Session) -> None:
    run(session, "seek 18")
    summary = dict(line.split(":", 1) for line in run(session, "summary"))
    assert summary["brokers"].strip() == "3 (2 active, 1 fenced)"
    assert summary["offline replicas"].strip() == "3"
    records = run(session, "records --from 15 --to 18 --type PARTITION_*")
    assert [line.split("\t")[0] for line in records] == ["15", "16", "17"]


def test_the_readme_seeks_to_when_broker_2_was_fenced(session: Session) -> None:
    """The README's --demo line goes back to the moment broker 2 was fenced: the offset of the
    record that fenced it in the demo history, not a number copied once."""
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    seek = int(re.search(r'metashell --demo -c "[^"]*seek (\d+); cat /brokers/2/state"', readme).group(1))
    run(session, f"seek {seek - 1}")
    assert run(session, "cat /brokers/2/state") == ["active"]
    run(session, f"seek {seek}")
    assert run(session, "cat /brokers/2/state") == ["fenced"]


@pytest.mark.parametrize("before,expected", [
    ("", sorted(COMMANDS)),
    ("ca", ["cat"]),
    ("cat /br", ["/brokers/"]),
    ("cat /brokers/", ["/brokers/1/", "/brokers/2/", "/brokers/3/"]),
    ("cd /topics; ls or", ["orders/"]),
    ("ls -", ["-l"]),
    ("find / -t", ["-type"]),
    ("cat /nope/x", []),
])
def test_completion_table(session: Session, before: str, expected: list[str]) -> None:
    if before.startswith("cd /topics; ls"):
        session.run_line("cd /topics")
    assert [c.text for c in complete(session, before)] == expected


def _metashell(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "metashell.cli", *args], input=stdin, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.slow
def test_one_shot_modes() -> None:
    proc = _metashell("--demo", "--", "ls", "/brokers")
    assert (proc.returncode, proc.stdout) == (0, "1\n2\n3\n")
    proc = _metashell("--demo", "-c", "cd /brokers; ls 1; cat /nope")
    assert proc.returncode == 1 and proc.stdout.startswith("cordoned-directories\ndirectories\n") and \
        proc.stderr.count("\n") == 1
    proc = _metashell("--demo", stdin="cd /features\nls\n")
    assert (proc.returncode, proc.stdout) == (0, "metadata.version\n")
    proc = _metashell("--demo", "--offset", "18", "-c", "cat /brokers/2/state")
    assert proc.stdout == "fenced\n"


_ESCAPES = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


def _read_until(fd: int, needle: bytes, timeout_s: float = 60.0) -> bytes:
    """What the terminal showed up to ``needle``, control sequences left out: prompt-toolkit may
    draw a completed word in two writes (``cd /bro``, then ``kers/``)."""
    out = b""
    deadline = time.monotonic() + timeout_s
    while needle not in _ESCAPES.sub(b"", out):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"never saw {needle!r}; got {out[-400:]!r}")
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    return out


def test_interactive_shell_through_a_pty(tmp_path: Path) -> None:
    main, child = pty.openpty()
    env = dict(os.environ, TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1", METASHELL_HISTORY=str(tmp_path / "history"), PAGER="cat",
               COLUMNS="100", LINES="50")
    proc = subprocess.Popen([sys.executable, "-m", "metashell.cli", "--demo"], stdin=child, stdout=child,
                            stderr=child, env=env, close_fds=True)
    os.close(child)
    try:
        _read_until(main, b"metashell:/>")
        os.write(main, b"cd /bro\t")  # completion fills in /brokers/
        _read_until(main, b"/brokers/")
        os.write(main, b"\r")
        _read_until(main, b"metashell:/brokers>")
        os.write(main, b"ls\r")
        _read_until(main, b"1\r\n2\r\n3")
        os.write(main, b"cat 2/state\r")
        _read_until(main, b"active")
        os.write(main, b"cat /nope\r")
        _read_until(main, b"metashell: cat: /nope: no such node")
        os.write(main, b"exit\r")
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(main)
    assert "cd /brokers/" in (tmp_path / "history").read_text()


def test_json_is_highlighted_with_the_theme_styles(monkeypatch) -> None:
    from metashell.shell.repl import highlight

    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = highlight('{"leader": 1}', "dark")
    assert "\x1b[" in coloured and "leader" in coloured
    assert highlight('{"leader": 1}', "light") != coloured
    assert highlight("active", "dark") == "active"  # plain text stays plain
    monkeypatch.setenv("NO_COLOR", "1")
    assert highlight('{"leader": 1}', "dark") == '{"leader": 1}'


def test_records_redact_secrets_unless_asked(tmp_path: Path) -> None:
    from engine.records import metadata_records as m
    from engine.records.kio_codec import i8, i32
    from engine.storage.metadata_log import MetadataLog

    with MetadataLog.create(tmp_path, fsync_policy="never") as log:
        log.append([m.ConfigRecordV0(resource_type=i8(4), resource_name="", name="sasl.jaas.config", value="sekrit"),
                    m.ConfigRecordV0(resource_type=i8(4), resource_name="", name="num.io.threads", value="8"),
                    m.UserScramCredentialRecordV0(name="alice", mechanism=i8(1), salt=b"salt", stored_key=b"k1",
                                                  server_key=b"k2", iterations=i32(4096))],
                   epoch=1, timestamp_ms=1)
    for show, visible in ((False, False), (True, True)):
        lines: list[str] = []
        session = Session(Source(log_dir=tmp_path), out=lines.append, show_secrets=show)
        session.load()
        session.run_line("records")
        text = "\n".join(lines)
        assert ("sekrit" in text) is visible and ("c2FsdA==" in text) is visible
        assert '"value":"8"' in text and ("[redacted]" in text) is not visible
