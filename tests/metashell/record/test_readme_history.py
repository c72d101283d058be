"""README.md's "Keep your cluster's metadata history", run as written: each command line of its
``sh`` blocks through ``sh`` in a fresh directory (the Quickstart test's stand-in clone and venv),
the recorder line (``... &``) as a background process that the test stops with SIGTERM at the end,
as a user's Ctrl-C would. The sample output the section prints is held against what `log` printed
here: the same lines, offsets, times and incarnation ids aside.

Waits are on what the commands print (the README's own `log` asked again until the recorder holds
the broker's second registration), with deadlines as safety nets, never as claims.
"""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import time

import pytest

from tests.engine.cluster.test_readme_quickstart import README, Quickstart

pytestmark = pytest.mark.slow

SAFETY_S = 120.0


def section() -> str:
    return README.read_text().split("\n## Keep your cluster's metadata history\n", 1)[1].split("\n## ", 1)[0]


def command_blocks() -> list[list[str]]:
    return [[line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]
            for block in re.findall(r"```sh\n(.*?)```", section(), re.S)]


def sample_patterns() -> list[re.Pattern]:
    """The section's sample `log` lines, as patterns: its offsets, times and ids stand for any."""
    sample = re.search(r"\n```\n(\d.*?)```", section(), re.S).group(1)
    patterns = []
    for line in sample.splitlines():
        text = re.escape(line)
        text = re.sub(r"^\d+", r"\\d+", text)
        text = re.sub(r"\d{4}\\-\d\d\\-\d\dT\d\d:\d\d:\d\d\\.\d{3}Z", r"\\S+Z", text)
        text = re.sub(r"epoch\\ \d+\\ \\->\\ \d+", r"epoch\\ \\d+\\ \\->\\ \\d+", text)
        text = re.sub(r"incarnation\\-id\\ \S+?\\ \\->\\ \S+$", r"incarnation\\-id\\ \\S+\\ \\->\\ \\S+", text)
        patterns.append(re.compile(text + "$"))
    return patterns


def test_keep_your_history_as_written(tmp_path):
    (up, record, kill, start, status), (log_broker, log_configs, diff, down) = command_blocks()
    assert up.startswith(".venv/bin/kraftd cluster up ") and record.endswith(" &")
    q = Quickstart(tmp_path)
    recorder = None
    try:
        q.ok(up)
        err = (tmp_path / "recorder.err").open("w")
        recorder = subprocess.Popen(["sh", "-c", "exec " + q.ports(record[:-1].strip())], cwd=q.cwd, env=q.env,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        q.ok(kill)
        q.ok(start)
        deadline = time.monotonic() + SAFETY_S
        while True:  # the README's own question, until the recorder holds broker 2's second registration
            history = q.ok(log_broker)
            if len(re.findall(r"  register: ", history)) >= 2:
                break
            assert recorder.poll() is None, (tmp_path / "recorder.err").read_text()
            assert time.monotonic() < deadline, f"broker 2 never registered twice in the archive:\n{history}"
            time.sleep(0.5)

        summary = q.ok(status)
        assert "gaps: none" in summary and f"recorder: writing (pid {recorder.pid})" in summary, summary
        held = int(re.search(r"offsets held: 0 to (\d+)", summary).group(1))
        assert held > 0

        lines = history.splitlines()
        again = [line for line in lines if "  register: " in line][0]
        old, new = re.search(r"incarnation-id (\S+) -> (\S+)$", again).groups()
        assert old != new  # a new incarnation, as the README says
        for pattern in sample_patterns():
            assert any(pattern.match(line) for line in lines), (pattern.pattern, history)

        configs = q.sh(log_configs)
        assert configs.returncode == 0 and "Traceback" not in configs.stderr, configs.stderr
        shown = configs.stdout.splitlines()
        assert len(shown) <= 5 and all(" /configs/TOPIC/" in line for line in shown), shown
        assert shown or "no changes" in configs.stderr, configs.stderr

        stat = q.ok(diff)
        assert re.search(r"^brokers\s+5 created$", stat, re.M) and re.search(r"^\d+ paths differ$", stat, re.M), stat

        q.ok(down)
    finally:
        if recorder is not None and recorder.poll() is None:
            recorder.send_signal(signal.SIGTERM)  # what Ctrl-C / kill %1 do: a clean close
            code = recorder.wait(timeout=60)
            text = (tmp_path / "recorder.err").read_text()
            assert code == 0, text
            assert re.search(r"stopped; the archive holds offsets up to \d+\n$", text), text
            assert "Traceback" not in text, text
        q.kill_all()
    assert shlex.split(record)[1] == "record"
