"""Facts of every real Kafka node in the corpus, read through the shell as an operator would.

The values were read off the files (records, snapshots, quorum-state) and pin the whole
path: decoding, replay, the tree and the commands.
"""

from __future__ import annotations

import pytest

from metashell.shell.session import Session
from metashell.source import Source
from tests.conftest import CORPUS, corpus_params

FACTS = {
    "AdiletBatyrbayev0520__air_analyzer": dict(
        topics=["__consumer_offsets", "canteen", "f103", "hall", "i105", "i111"], partitions=55, leaderless=0,
        states=["active"], features={"group.version": 1, "metadata.version": 25, "transaction.version": 2},
        leader=1, epoch=3, leader_changes=3, probe=("i111", 1, [1], 0)),
    "Danielowo2000__BigDataTechnologies-Version-2__tarball-3.5.0": dict(
        topics=["quickstartmore-events"], partitions=1, leaderless=1, states=["fenced"],
        features={"metadata.version": 11}, leader=1, epoch=5, leader_changes=5,
        probe=("quickstartmore-events", -1, [1], 2)),
    "Yashasvi960__kafka-service": dict(
        topics=["__consumer_offsets", "my-kafka-streams-app-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog",
                "telemetry", "vehicle.avg.speed", "vehicle.telemetry"], partitions=54, leaderless=0,
        states=["active"], features={"eligible.leader.replicas.version": 1, "group.version": 1,
                                     "metadata.version": 27, "transaction.version": 2},
        leader=1, epoch=4, leader_changes=4, probe=("vehicle.telemetry", 1, [1], 2)),
    "djsoler__Big_Data_Proye_Docker": dict(
        topics=["weather_data"], partitions=1, leaderless=0, states=["active"], features={"metadata.version": 19},
        leader=1, epoch=5, leader_changes=5, probe=("weather_data", 1, [1], 8)),
    **{f"hiage__kafka-raft/kafka{n}": dict(
        topics=["__consumer_offsets", "test1", "test5"], partitions=60, leaderless=0,
        states=["active", "active", "active"], features={"metadata.version": 7}, leader=1, epoch=1,
        leader_changes=1, voters=3, probe=("test5", 3, [3, 1, 2], 0)) for n in (1, 2, 3)},
    "weebee-io__backend": dict(
        topics=["__consumer_offsets", "clustering_userRank", "jeongsooidiot"], partitions=52, leaderless=52,
        states=["fenced"], features={"metadata.version": 21}, leader=1, epoch=24, leader_changes=24,
        probe=("jeongsooidiot", -1, [1], 31)),
}


def _ask(session: Session, line: str) -> list[str]:
    session.lines.clear()
    assert session.run_line(line) == 0, (line, session.lines)
    return list(session.lines)


def _json(session: Session, line: str):
    import json

    return json.loads("\n".join(_ask(session, line)))


@pytest.mark.parametrize("node", corpus_params(sorted(FACTS)), ids=lambda n: n or "no-corpus")
def test_node_facts_through_the_shell(node: str) -> None:
    import json

    facts = FACTS[node]
    lines: list[str] = []
    session = Session(Source(log_dir=CORPUS / node), out=lines.append)
    session.lines = lines
    session.load()
    assert _ask(session, "ls /topics") == facts["topics"]
    assert list(_json(session, "cat --json /brokers/*/state").values()) == facts["states"]
    assert {path.rsplit("/", 1)[1]: level for path, level in
            _json(session, "cat --json /features/*").items()} == facts["features"]
    assert _ask(session, "cat /quorum/leader /quorum/epoch") == [
        "==> /quorum/leader <==", str(facts["leader"]), "", "==> /quorum/epoch <==", str(facts["epoch"])]
    assert len(_ask(session, "ls /quorum/leader-changes")) == facts["leader_changes"]
    assert len(_ask(session, "ls /quorum/voters")) == facts.get("voters", 1)
    summary = dict(line.split(":", 1) for line in _ask(session, "summary"))
    assert int(summary["partitions"]) == facts["partitions"] and int(summary["leaderless"]) == facts["leaderless"]
    topic, leader, isr, leader_epoch = facts["probe"]
    partition = json.loads("\n".join(_ask(session, f"cat '/topics/{topic}/0'")))
    assert (partition["leader"], partition["isr"], partition["leaderEpoch"]) == (leader, isr, leader_epoch)
