"""The dashboard opens on every real Kafka log directory of the corpus, and its panels agree
with the shell's answers for the same image."""

from __future__ import annotations

import asyncio

import pytest

from metashell.dashboard.app import DashboardApp
from metashell.dashboard.history import History
from metashell.dashboard.widgets import BrokersPanel, HeaderBar, PartitionsPanel, QuorumPanel
from metashell.shell.session import Session
from metashell.source import Source
from tests.conftest import CORPUS, corpus_params

CORPUS_DIRS = sorted(str(p.parent.relative_to(CORPUS)) for p in CORPUS.glob("**/__cluster_metadata-0")) \
    if CORPUS.is_dir() else []


def _shell(node: str, offset: int, command: str) -> list[str]:
    lines: list[str] = []
    session = Session(Source(log_dir=CORPUS / node), out=lines.append, err=lines.append)
    session.load(offset=offset)  # the image as of that offset, inclusive, as the frame shows it
    session.run_line(command)
    return lines


@pytest.mark.parametrize("node", corpus_params(CORPUS_DIRS), ids=lambda n: n or "no-corpus")
@pytest.mark.slow
def test_dashboard_opens_on_corpus_and_agrees_with_the_shell(node: str) -> None:
    history = History.open_log_dir(CORPUS / node)
    app = DashboardApp(history)

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause()
            screen = app.main
            frame = app.frame
            assert frame.offset == history.last_offset
            brokers = list(screen.query_one(BrokersPanel).table.rows)
            partitions = list(screen.query_one(PartitionsPanel).all_rows)
            voters = list(screen.query_one(QuorumPanel).table.rows)
            header = screen.query_one(HeaderBar).info
            shell_brokers = _shell(node, frame.offset, "ls /brokers")
            assert sorted(str(b.broker_id) for b in brokers if b.state != "unregistered") == sorted(shell_brokers)
            topics = {p.topic for p in partitions}
            assert topics == set(_shell(node, frame.offset, "ls /topics"))
            assert len(partitions) == frame.image.partition_count
            leader = _shell(node, frame.offset, "cat /quorum/leader")
            assert header.leader.split()[0] == leader[0].split()[0]
            assert {v.node_id for v in voters} == {int(i) for i in _shell(node, frame.offset, "ls /quorum/voters")}

    asyncio.run(main())
