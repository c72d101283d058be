"""The live shell on a real quorum: ``metashell --bootstrap-controller`` attached to a running
``kraftd cluster`` (3 controllers, 2 simulated brokers), shared by the whole module.

The tree follows commits (a topic created through a real Kafka admin client; a broker killed,
fenced, its partition's ISR shrinking into the ELR, then started again), ``watch`` prints as a
node changes, ``seek`` / ``live`` move in what was fetched, one-shot commands answer from the
state at attach time, and the interactive shell runs in a real pseudo-terminal. Waits poll to
a deadline, a safety net against hangs, never a performance claim. Each test leaves the cluster
as it found it (every node up, brokers unfenced); every process is SIGKILLed at the end.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from typing import Iterator

import pytest
from kafka.admin import NewTopic

from metashell import cli
from metashell.shell.session import Session
from tests.engine.cluster.test_cluster_tool import Cluster
from tests.live_cluster import bootstrap, create_topic, running_cluster
from tests.pty_terminal import ROOT, Terminal, screen
from tests.engine.server.test_controller_processes import poll

# processes, sockets and timers of their own: out of the fast tier
pytestmark = pytest.mark.slow

DEADLINE_S = 60.0  # safety nets


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    yield from running_cluster(tmp_path_factory.mktemp("live-shell") / "state", "--controllers", "3",
                               "--brokers", "2", "--session-timeout-ms", "5000")


def live_session(cluster: Cluster) -> tuple[Session, list[str]]:
    """A following session, as the interactive shell has it (its output kept in ``lines``)."""
    lines: list[str] = []
    session = Session(cli.live_source(bootstrap(cluster)), out=lines.append)
    session.load()
    session.lines = lines
    return session, lines


def answer(session: Session, line: str) -> list[str]:
    """What ``line`` prints; it must succeed."""
    before = len(session.lines)
    assert session.run_line(line) == 0, session.lines[before:]
    return session.lines[before:]


def test_the_tree_follows_topic_creation(cluster):
    session, _ = live_session(cluster)
    try:
        attached = session.image.provenance.last_offset
        assert re.fullmatch(rf"\[live @{attached}( lag \d+)?\] metashell:/> ", session.prompt())
        assert "followed" not in answer(session, "ls /topics")
        create_topic(cluster, NewTopic("followed", num_partitions=2, replication_factor=2))
        poll(lambda: "followed" in answer(session, "ls /topics"), "the new topic in the live tree", DEADLINE_S)
        assert answer(session, "ls /topics/followed")[:2] == ["0", "1"]
        assert session.image.provenance.last_offset > attached
        assert session.prompt().startswith(f"[live @{session.image.provenance.last_offset}")
    finally:
        session.source.close()


def _state(session: Session, broker: int) -> str:
    return answer(session, f"cat /brokers/{broker}/state")[0]


def test_local_names_the_attached_cluster_and_the_quorum_asked(cluster):
    """/local in a live session: the cluster id the attachment read (as meta.properties gives it offline),
    the bootstrap controllers as the source, and no node id (the tool is an observer, not a node)."""
    session, _ = live_session(cluster)
    try:
        # DescribeCluster tells the id within a second or so of the attach
        poll(lambda: answer(session, "cat /local/cluster-id") == [cluster.registry()["cluster_id"]],
             "the cluster id under /local", DEADLINE_S)
        assert answer(session, "cat /local/source") == [bootstrap(cluster)]
        assert answer(session, "cat /local/node-id") == ["null"]
    finally:
        session.source.close()


def test_fencing_isr_and_elr_follow_a_killed_broker(cluster):
    create_topic(cluster, NewTopic("elr", -1, -1, replica_assignments={0: [1, 2]},
                                   topic_configs={"min.insync.replicas": "2"}))
    session, _ = live_session(cluster)

    def partition() -> dict:
        return json.loads("\n".join(answer(session, "cat --json /topics/elr/0")))

    try:
        poll(lambda: "elr" in answer(session, "ls /topics") and partition()["isr"] == [1, 2], "elr-0 in sync",
             DEADLINE_S)
        cluster.ok("kill", "broker-2")
        poll(lambda: _state(session, 2) == "fenced", "broker 2 fenced in the live tree", DEADLINE_S)
        poll(lambda: partition()["isr"] == [1] and partition()["eligibleLeaderReplicas"] == [2],
             "ISR [1], ELR [2] in the live tree", DEADLINE_S)
        cluster.ok("start", "broker-2")
        poll(lambda: _state(session, 2) == "active" and partition()["isr"] == [1, 2]
             and partition()["eligibleLeaderReplicas"] == [], "broker 2 back in the ISR", DEADLINE_S)
    finally:
        session.source.close()


def test_watch_prints_a_node_as_commits_change_it(cluster):
    session, lines = live_session(cluster)
    first_print = threading.Event()
    out = session.out

    def seen(line: str) -> None:
        out(line)
        if line == "/topics/watched: no such node":
            first_print.set()

    session.out = seen
    creator = threading.Thread(target=lambda: first_print.wait(DEADLINE_S) and create_topic(
        cluster, NewTopic("watched", num_partitions=1, replication_factor=1)))
    creator.start()
    try:
        assert session.run_line(f"watch /topics/watched --count 2 --timeout-ms {int(DEADLINE_S * 1000)}") == 0
    finally:
        creator.join()
        session.source.close()
    headers = [i for i, line in enumerate(lines) if line.startswith("==> /topics/watched @")]
    assert len(headers) == 2, lines
    assert lines[headers[0] + 1] == "/topics/watched: no such node"
    assert lines[headers[1] + 1:] == ["0", "configs", "id", "name"]


def test_seek_goes_back_into_what_was_fetched_and_live_follows_again(cluster):
    session, lines = live_session(cluster)
    try:
        attached = session.image.provenance.last_offset
        create_topic(cluster, NewTopic("sought", num_partitions=1, replication_factor=1))
        poll(lambda: "sought" in answer(session, "ls /topics"), "the new topic in the live tree", DEADLINE_S)
        assert answer(session, f"seek {attached}") == [f"at offset {attached}"]
        assert session.prompt() == f"[seek @{attached}] metashell:/> "
        assert "sought" not in answer(session, "ls /topics")  # the past stays put while commits arrive
        assert "sought" not in answer(session, "ls /topics")
        assert answer(session, "live")[0].startswith("following at offset ")
        assert "sought" in answer(session, "ls /topics")
        assert session.prompt().startswith(f"[live @{session.image.provenance.last_offset}")
        lines.clear()
        assert session.run_line("seek nope") == 1
        assert lines == ["metashell: seek: nope: expected an offset, 'latest' or --time TIME"]
    finally:
        session.source.close()


def test_seek_before_the_window_is_one_line(cluster):
    lines: list[str] = []
    source = cli.live_source(bootstrap(cluster))
    source.window_records = 50  # the cluster's log is longer: the oldest records are trimmed
    session = Session(source, out=lines.append)
    try:
        session.load()
        first, last = source.window
        assert first > 0
        assert session.run_line("seek 0") == 1
        assert lines == [f"metashell: seek: offset 0 is before what this session fetched in its window of 50 "
                         f"records: seek {first}..{last}"]
    finally:
        source.close()


def test_seek_past_the_newest_is_one_line_and_the_shell_goes_on_following(cluster):
    session, lines = live_session(cluster)
    try:
        before = (session.image, session.cwd)
        lines.clear()
        assert session.run_line("seek 99999999") == 1
        first, last = session.source.window
        assert lines == [f"metashell: seek: offset 99999999 is past the newest record this session fetched: "
                         f"seek {first}..{last}, or live"]
        assert session.source.following and (session.image, session.cwd) == before
        assert session.prompt().startswith("[live @")
    finally:
        session.source.close()


def test_one_shot_commands_answer_from_attach_time(cluster):
    """Commands from stdin without a terminal: the state at attach, however long the session."""
    shell = subprocess.Popen([sys.executable, "-m", "metashell.cli", "--bootstrap-controller", bootstrap(cluster)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=ROOT)
    try:
        def ask(line: str) -> list[str]:
            shell.stdin.write(f"{line}; pwd\n")
            shell.stdin.flush()
            got = []
            while (text := shell.stdout.readline()) not in ("/\n", ""):
                got.append(text.rstrip("\n"))
            return got

        before = ask("ls /topics")
        assert "later" not in before
        create_topic(cluster, NewTopic("later", num_partitions=1, replication_factor=1))
        follower, _ = live_session(cluster)
        try:
            poll(lambda: "later" in answer(follower, "ls /topics"), "the new topic in a following session",
                 DEADLINE_S)
        finally:
            follower.source.close()
        assert ask("ls /topics") == before
        out, err = shell.communicate("", timeout=DEADLINE_S)
        assert shell.returncode == 0, err
        assert re.fullmatch(r"metashell: note: attached to \S+ at offset \d+ \(leader \d+, epoch \d+\)\n", err)
    finally:
        if shell.poll() is None:
            shell.kill()


def test_c_commands_and_watch_without_a_terminal(cluster, capsys):
    errors: list[str] = []
    assert cli.run(["--bootstrap-controller", bootstrap(cluster), "-c", "cat /brokers/1/state; pwd"],
                   err=errors.append) == 0
    assert capsys.readouterr().out == "active\n/\n"
    assert cli.run(["--bootstrap-controller", bootstrap(cluster), "-c", "watch /brokers/1/state"],
                   err=errors.append) == 1
    assert capsys.readouterr().out == ""
    assert errors[-1] == "metashell: watch: without a terminal watch needs an end: --count N or --timeout-ms MS"
    assert cli.run(["--bootstrap-controller", bootstrap(cluster), "--",
                    "watch", "/brokers/1/state", "--timeout-ms", "0"], err=errors.append) == 0
    assert capsys.readouterr().out.splitlines()[1:] == ["active"]


def test_a_wrong_cluster_id_is_one_line(cluster, tmp_path):
    config = tmp_path / "client.properties"
    config.write_text("cluster.id=AAAAAAAAAAAAAAAAAAAAAA\n")
    errors: list[str] = []
    assert cli.run(["--bootstrap-controller", bootstrap(cluster), "--command-config", str(config),
                    "-c", "ls"], err=errors.append) == 1
    assert len(errors) == 1 and errors[0].startswith("metashell: ") and "\n" not in errors[0], errors


# -- the interactive shell in a pseudo-terminal ----------------------------------------------------


def terminal_env(tmp_path, **more: str) -> dict[str, str]:
    """A plain xterm for the shell, its history file in ``tmp_path``, CI unset (the shell asks)."""
    env = {**os.environ, "TERM": "xterm", "NO_COLOR": "1", "PROMPT_TOOLKIT_NO_CPR": "1",
           "METASHELL_HISTORY": str(tmp_path / "history"), **more}
    env.pop("CI", None)
    return env


def test_the_interactive_live_shell_in_a_terminal(cluster, tmp_path):
    env = terminal_env(tmp_path, COLUMNS="120", LINES="40")
    terminal = Terminal(["--bootstrap-controller", bootstrap(cluster)], env)
    try:
        row, first = terminal.expect(r"^\[live @(\d+)(?: lag \d+)?\] metashell:/>$")
        # idle, the prompt follows the quorum (its leader appends a NoOpRecord every 500 ms)
        terminal.expect(rf"^\[live @(?!{first.group(1)}\])\d+(?: lag \d+)?\] metashell:/>$", row)
        terminal.type("watch /brokers/1/state\r")
        shown, _ = terminal.expect(r"^==> /brokers/1/state @\d+ <==$", row)
        assert terminal.expect(r"^active$", shown)[0] == shown + 1
        terminal.type("\x03")  # Ctrl-C: ends the watch, not the shell
        back, _ = terminal.expect(r"^\[live @\d+(?: lag \d+)?\] metashell:/>$", shown + 1)
        terminal.type("cat /brokers/2/state\r")
        assert terminal.expect(r"^active$", back + 1)[0] == back + 1
        terminal.type("exit\r")
        assert terminal.close() == 0
    finally:
        terminal.kill()


def test_a_command_typed_while_the_live_shell_attaches_shows_once(cluster, tmp_path):
    """Typed before the first prompt (the attach and catch-up take seconds): the terminal does not
    echo it, the prompt shows it once and runs it. The shell is held before the attach by its
    --command-config, a FIFO it reads: once this side's open returns, the shell is reading it."""
    config = tmp_path / "client.properties"
    os.mkfifo(config)
    env = terminal_env(tmp_path)
    terminal = Terminal(["--bootstrap-controller", bootstrap(cluster), "--command-config", str(config)], env)
    try:
        with open(config, "w") as fifo:  # returns once the shell opened it
            terminal.type("pwd\r")
            fifo.write(f"request.timeout.ms={int(DEADLINE_S * 1000)}\n")
        row, _ = terminal.expect(r"^\[live @\d+(?: lag \d+)?\] metashell:/> pwd$")
        assert terminal.expect(r"^/$", row)[0] == row + 1
        assert [line for line in screen(terminal.text) if "pwd" in line] == [screen(terminal.text)[row]]
        terminal.type("exit\r")
        assert terminal.close() == 0
    finally:
        terminal.kill()


def test_dash_without_a_terminal_prints_the_summary_at_attach_time(cluster, capsys):
    errors: list[str] = []
    assert cli.run(["dash", "--bootstrap-controller", bootstrap(cluster)], err=errors.append) == 0
    out = capsys.readouterr().out.splitlines()
    offset = int(out[0].split()[1])
    assert errors == [f"metashell: the dashboard needs a terminal (stdin and stdout a TTY, CI unset); "
                      f"the summary at offset {offset} follows"]
    assert "brokers:      2 (2 active)" in out


def test_dash_opens_the_live_dashboard_in_a_terminal(cluster):
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "50"}
    env.pop("CI", None)
    terminal = Terminal(["dash", "--bootstrap-controller", bootstrap(cluster)], env)
    try:
        terminal.read_until("● live @")  # the header, following (docs/dashboard.md)
        terminal.type("q")
        assert terminal.close() == 0
    finally:
        terminal.kill()


def test_a_refused_seek_keeps_the_live_prompt_in_a_terminal(cluster, tmp_path):
    env = terminal_env(tmp_path, COLUMNS="160", LINES="40")
    terminal = Terminal(["--bootstrap-controller", bootstrap(cluster)], env)
    try:
        row, _ = terminal.expect(r"^\[live @\d+(?: lag \d+)?\] metashell:/>$")
        terminal.type("seek 99999999\r")
        refused, _ = terminal.expect(r"^metashell: seek: offset 99999999 is past the newest record this session "
                                     r"fetched: seek -?\d+\.\.\d+, or live$", row)
        terminal.expect(r"^\[live @\d+(?: lag \d+)?\] metashell:/>$", refused + 1)  # still following
        terminal.type("exit\r")
        assert terminal.close() == 0
    finally:
        terminal.kill()
