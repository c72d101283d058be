"""The live shell's own commands: ``watch`` a node as commits change it, ``live`` to follow again.

Both need a live quorum (``--bootstrap-controller``, source.LiveSource). ``watch`` is the one
command that moves a frozen session (one-shot ``-c`` commands answer from the state at attach
time): watching is following, and the commands after it answer from where it stopped. It asks
what each wait brought as a change set, and renders the path again only when that reaches it
(metashell.tree.tree_layout.reaches): commits of NoOpRecords or of other subjects cost nothing.
"""

from __future__ import annotations

import argparse

from engine.image.change_set import EMPTY_CHANGE_SET, ChangeSet
from metashell.shell.registry import ArgParser, ShellError, command
from metashell.shell.session import Session
from metashell.tree.nodes import NodeError, render, resolve
from metashell.tree.tree_layout import reaches

WAIT_SLICE_S = 1.0  # a watch without a deadline still wakes up this often (Ctrl-C lands between waits too)


def _live_source(session: Session):
    if not session.source.live:
        raise ShellError("needs a live quorum: metashell --bootstrap-controller HOST:PORT[,HOST:PORT...]")
    return session.source


@command("live", "follow the cluster again (after seek)", """
live

  Returns to following the cluster: the newest committed image, and every commit after
  it as it comes (the prompt shows [live @OFFSET], with the lag behind the leader's high
  watermark when there is one). Needs --bootstrap-controller. The same as seek latest.

  Example:  seek 1200; cat /brokers/2/state; live
""")
def _live(session: Session, args: argparse.Namespace) -> int:
    _live_source(session)
    session.load()
    session.out(f"following at offset {session.image.provenance.last_offset}")
    return 0


def _watch_arguments(p: ArgParser) -> None:
    p.add_argument("path")
    p.add_argument("--count", type=int, help="end after printing the node this many times")
    p.add_argument("--timeout-ms", type=int, help="end after this long")


@command("watch", "print a node each time a commit changes it", """
watch PATH [--count N] [--timeout-ms MS]

  Prints PATH now, as cat prints a file or ls a directory, under a line
  ==> PATH @OFFSET <==, then again each time a commit changes what it prints (a node that
  goes away prints PATH: no such node, and is watched until it comes back). Ctrl-C ends the
  watch, not the shell. --count ends it after N prints (the first included), --timeout-ms
  after MS milliseconds; without a terminal (-c, commands after --, or stdin) one of them
  is needed. Watching follows the cluster: after a seek it starts from the newest image,
  and in one-shot commands the ones after it answer from where it stopped.
  Needs --bootstrap-controller.

  Examples:  watch /brokers/2/state    watch /topics/orders/0 --count 3
             watch /topics --timeout-ms 60000
""", _watch_arguments)
def _watch(session: Session, args: argparse.Namespace) -> int:
    source = _live_source(session)
    if args.count is not None and args.count < 1 or args.timeout_ms is not None and args.timeout_ms < 0:
        raise ShellError("--count must be positive and --timeout-ms not negative")
    if not session.interactive and args.count is None and args.timeout_ms is None:
        raise ShellError("without a terminal watch needs an end: --count N or --timeout-ms MS")
    path = session.absolute(args.path)
    clock = session.clock
    deadline = None if args.timeout_ms is None else clock() + args.timeout_ms / 1000
    source.poll()  # even when frozen (one-shot): watching is following
    session.set_image(*source.load())  # the newest image, following
    shown, prints, connected = None, 0, source.status.connected
    changes: ChangeSet | None = None  # since the last render; None: unknown (render)
    mark = source.mark()
    try:
        while True:
            lines = _lines(session, path) if reaches(changes, path) else shown
            if lines != shown:
                session.out(f"==> {path} @{session.image.provenance.last_offset} <==")
                for line in lines:
                    session.out(line)
                session.flush()
                shown, prints = lines, prints + 1
                if args.count is not None and prints >= args.count:
                    return 0
            remaining = None if deadline is None else deadline - clock()
            if remaining is not None and remaining <= 0:
                return 0
            changes = EMPTY_CHANGE_SET
            if source.wait(WAIT_SLICE_S if remaining is None else min(remaining, WAIT_SLICE_S)):
                image, info = source.load()
                changes = source.changes_since(mark)  # after load: it may have taken more
                mark = source.mark()
                session.set_image(image, info, changes)
            status = source.status
            if status.error:
                raise ShellError(status.error)
            if status.connected != connected:  # disconnected, retrying / following again: say so once
                connected = status.connected
                session.err(f"metashell: watch: {status.note}")
                session.flush()
    except KeyboardInterrupt:  # Ctrl-C ends the watch; the shell goes on
        session.out("")  # the terminal echoed ^C where the cursor stood: the prompt starts a line of its own
        return 0


def _lines(session: Session, path: str) -> list[str]:
    try:
        node = resolve(session.root, path)
    except NodeError:
        return [f"{path}: no such node"]
    if node.is_directory:
        return list(node.child_names())
    return render(node.human_value()).splitlines()
