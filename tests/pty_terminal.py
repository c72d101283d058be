"""A program on the child side of a pseudo-terminal, as tmux or xterm runs it: the bytes it writes,
what a terminal would show of them (``screen``), and keys typed into it. No tests here."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEADLINE_S = 60.0  # safety nets


_CONTROL = re.compile(r"\x1b\[([?0-9;]*)([A-Za-z])|\x1b[()][0-9A-B]|\x1b[=>]|([\r\n\x08\x07])")


def screen(text: str) -> list[str]:
    """The lines a terminal shows after ``text``: enough of VT100 for prompt-toolkit's redraws,
    which rewrite only the characters that changed (cursor moves, erase, plain text)."""
    lines, row, col = [""], 0, 0

    def put(chunk: str) -> None:
        nonlocal col
        line = lines[row].ljust(col)
        lines[row] = line[:col] + chunk + line[col + len(chunk):]
        col += len(chunk)

    at = 0
    for match in _CONTROL.finditer(text):
        put(text[at:match.start()])
        at = match.end()
        args, final, plain = match.group(1), match.group(2), match.group(3)
        n = int(args) if args and args.isdigit() else 1
        if plain == "\r":
            col = 0
        elif plain == "\n":
            row += 1
            lines.extend([""] * (row + 1 - len(lines)))
        elif plain == "\x08":
            col = max(0, col - 1)
        elif final == "A":
            row = max(0, row - n)
        elif final == "B":
            row += n
            lines.extend([""] * (row + 1 - len(lines)))
        elif final == "C":
            col += n
        elif final == "D":
            col = max(0, col - n)
        elif final == "J":
            lines[row] = lines[row][:col]
            del lines[row + 1:]
        elif final == "K":
            lines[row] = lines[row][:col]
    put(text[at:])
    return [line.rstrip() for line in lines]


class Terminal:
    """``metashell`` on the child side of a pty: what it writes, and keys typed into it."""

    def __init__(self, argv: list[str], env: dict[str, str], size: tuple[int, int] = (40, 120),
                 program: list[str] | None = None):
        """``metashell ARGV`` (or ``program``, a whole command line) in a terminal of ``size``
        (rows, columns)."""
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the pty is its controlling terminal, so Ctrl-C is a SIGINT
            os.chdir(ROOT)
            command = program or [sys.executable, "-m", "metashell.cli", *argv]
            os.execve(command[0], command, env)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
        self.text = ""
        self.ended = False

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def read_until(self, text: str) -> None:
        """Read until ``text`` was written (escape sequences between its characters aside)."""
        deadline = time.monotonic() + DEADLINE_S
        while text not in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", self.text):
            left = deadline - time.monotonic()
            assert left > 0, f"no {text!r} in the terminal after {DEADLINE_S} s"
            self._read(left)

    def _read(self, timeout_s: float) -> None:
        if select.select([self.fd], [], [], timeout_s)[0]:
            try:
                self.text += os.read(self.fd, 65536).decode(errors="replace")
            except OSError:  # the child closed the terminal
                assert False, f"the program ended:\n{self.text[-2000:]}"

    def expect(self, pattern: str, after: int = 0) -> tuple[int, re.Match]:
        """Read until ``pattern`` matches a line of the screen from line ``after`` on: that line's
        number and the match."""
        deadline = time.monotonic() + DEADLINE_S
        compiled = re.compile(pattern)
        while True:
            lines = screen(self.text)
            for row in range(after, len(lines)):
                if found := compiled.search(lines[row]):
                    return row, found
            left = deadline - time.monotonic()
            assert left > 0, f"no {pattern!r} on the screen after {DEADLINE_S} s:\n" + "\n".join(lines[after:])
            self._read(left)

    def close(self) -> int:
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.ended = True
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
            if select.select([self.fd], [], [], 0.1)[0]:
                try:
                    os.read(self.fd, 65536)
                except OSError:
                    pass
        self.kill()
        return -9

    def kill(self) -> None:
        if not self.ended:  # never a pid reaped already (another process may have it now)
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            os.close(self.fd)
            self.ended = True
