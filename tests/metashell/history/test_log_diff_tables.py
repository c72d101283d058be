"""``log`` and ``diff`` as tables of inputs and expected outputs over the scripted history
(tests/metashell/history/history_script.py: commits, an aborted transaction, one still open, a
topic deleted and created again under its name, a broker registered again with a new
incarnation, config, ACL, quota, SCRAM, feature, kraft.version, voter and leader changes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metashell.shell.session import Session
from metashell.source import Source
from tests.metashell.history.history_script import write_story

OLD_ID, NEW_ID = "AAAAAAAAAAAAAAAAAAAAoQ", "AAAAAAAAAAAAAAAAAAAAog"


@pytest.fixture(scope="module")
def story(tmp_path_factory) -> Path:
    return write_story(tmp_path_factory.mktemp("story"))


def run(directory: Path, line: str) -> tuple[int, list[str], list[str]]:
    out: list[str] = []
    err: list[str] = []
    session = Session(Source(log_dir=directory), out=out.append, err=err.append)
    session.load()
    err.clear()  # the load's note (a transaction open at the end) is the shell's, not the command's
    return session.run_line(line), out, [line.replace(str(directory), "DIR") for line in err]


OPEN = ["", "in a transaction still open (not applied yet):"]
ABORTED = ["", "in aborted transactions (no effect):"]

LOG_TABLE = [
    ("log /configs/TOPIC/orders/retention.ms", [
        "18  1970-01-01T00:00:19.000Z  REMOVE_TOPIC_RECORD  /configs/TOPIC/orders/retention.ms  deleted (was 3600000)",
        "7  1970-01-01T00:00:08.000Z  CONFIG_RECORD  /configs/TOPIC/orders/retention.ms  86400000 -> 3600000",
        "5  1970-01-01T00:00:05.000Z  CONFIG_RECORD  /configs/TOPIC/orders/retention.ms  created 86400000", *OPEN,
        "33  1970-01-01T00:00:33.000Z  CONFIG_RECORD  /configs/TOPIC/orders/retention.ms  created 1"]),
    # the tree's other name for the same config; -n counts the newest, the open transaction's first
    ("log /topics/orders/configs/retention.ms -n 2", [
        "18  1970-01-01T00:00:19.000Z  REMOVE_TOPIC_RECORD  /configs/TOPIC/orders/retention.ms  deleted (was 3600000)",
        *OPEN, "33  1970-01-01T00:00:33.000Z  CONFIG_RECORD  /configs/TOPIC/orders/retention.ms  created 1"]),
    ("log /topics/orders/0/leader", [
        "30  1970-01-01T00:00:31.000Z  PARTITION_CHANGE_RECORD  /topics/orders/0/leader  1 -> 2",
        "20  1970-01-01T00:00:20.000Z  PARTITION_RECORD  /topics/orders/0/leader  created 1",
        "18  1970-01-01T00:00:19.000Z  REMOVE_TOPIC_RECORD  /topics/orders/0/leader  deleted (was 1)",
        "6  1970-01-01T00:00:05.000Z  PARTITION_RECORD  /topics/orders/0/leader  created 1"]),
    ("log /topics/orders/0 --since 21", [
        "30  1970-01-01T00:00:31.000Z  PARTITION_CHANGE_RECORD  /topics/orders/0  leader 1 -> 2, leaderEpoch 0 -> 1, "
        "partitionEpoch 0 -> 1, eligibleLeaderReplicas [] -> [1]"]),
    # a committed transaction's change took effect at its end marker (17), the record stands at 16
    ("log /topics/orders/0 --since 7 --until 17", [
        "17 (record 16)  1970-01-01T00:00:17.000Z  PARTITION_CHANGE_RECORD  /topics/orders/0  isr [1] -> [1,2], "
        "partitionEpoch 0 -> 1"]),
    ("log /brokers/1 -n 3", [
        "23  1970-01-01T00:00:24.000Z  BROKER_REGISTRATION_CHANGE_RECORD  /brokers/1  controlled_shutdown: "
        "state active -> controlled-shutdown, in-controlled-shutdown false -> true",
        "22  1970-01-01T00:00:23.000Z  BROKER_REGISTRATION_CHANGE_RECORD  /brokers/1  unfence: state fenced -> active, "
        "fenced true -> false",
        "21  1970-01-01T00:00:22.000Z  REGISTER_BROKER_RECORD  /brokers/1  register: epoch 11 -> 30, incarnation-id "
        "AAAAAAAAAAAAAAAAAAAACg -> AAAAAAAAAAAAAAAAAAAACw, state active -> fenced, fenced false -> true"]),
    ("log /brokers/1/incarnation-id", [
        "21  1970-01-01T00:00:22.000Z  REGISTER_BROKER_RECORD  /brokers/1/incarnation-id  register: "
        "AAAAAAAAAAAAAAAAAAAACg -> AAAAAAAAAAAAAAAAAAAACw",
        "2  1970-01-01T00:00:03.000Z  REGISTER_BROKER_RECORD  /brokers/1/incarnation-id  register: created "
        "AAAAAAAAAAAAAAAAAAAACg"]),
    ("log /quorum", [
        "29  1970-01-01T00:00:30.000Z  LEADER_CHANGE  /quorum/leader  leaderId 1 -> 2, epoch 1 -> 2",
        '25  1970-01-01T00:00:25.000Z  KRAFT_VOTERS  /quorum/voters/1  created {"id":1,"directory-id":'
        '"AAAAAAAAAAAAAAAAAAAA0Q","endpoints":[{"name":"CONTROLLER","host":"c1","port":9093}]}',
        '25  1970-01-01T00:00:25.000Z  KRAFT_VOTERS  /quorum/voters/2  created {"id":2,"directory-id":'
        '"AAAAAAAAAAAAAAAAAAAA0g","endpoints":[{"name":"CONTROLLER","host":"c2","port":9093}]}',
        "24  1970-01-01T00:00:25.000Z  KRAFT_VERSION  /quorum/kraft-version  created 1",
        '0  1970-01-01T00:00:01.000Z  LEADER_CHANGE  /quorum/leader  created {"leaderId":1,"epoch":1}']),
    ("log /acls", [
        '26  1970-01-01T00:00:27.000Z  REMOVE_ACCESS_CONTROL_ENTRY_RECORD  /acls/AAAAAAAAAAAAAAAAAAAKwQ  deleted (was '
        '{"id":"AAAAAAAAAAAAAAAAAAAKwQ","resourceType":2,"resourceName":"orders","patternType":3,'
        '"principal":"User:alice","host":"*","operation":3,"permissionType":3})',
        '8  1970-01-01T00:00:09.000Z  ACCESS_CONTROL_ENTRY_RECORD  /acls/AAAAAAAAAAAAAAAAAAAKwQ  created '
        '{"id":"AAAAAAAAAAAAAAAAAAAKwQ","resourceType":2,"resourceName":"orders","patternType":3,'
        '"principal":"User:alice","host":"*","operation":3,"permissionType":3}']),
    ("log /client-quotas", [
        "27  1970-01-01T00:00:28.000Z  CLIENT_QUOTA_RECORD  /client-quotas/user=alice/producer_byte_rate  deleted "
        "(was 1024.0)",
        "9  1970-01-01T00:00:10.000Z  CLIENT_QUOTA_RECORD  /client-quotas/user=alice/producer_byte_rate  created 1024.0"]),
    ("log /scram", [  # never a salt or a key
        "28  1970-01-01T00:00:29.000Z  USER_SCRAM_CREDENTIAL_RECORD  /scram/SCRAM-SHA-256/alice  iterations 4096 -> 8192",
        '10  1970-01-01T00:00:11.000Z  USER_SCRAM_CREDENTIAL_RECORD  /scram/SCRAM-SHA-256/alice  created {"name":"alice",'
        '"mechanism":1,"salt":"[redacted]","storedKey":"[redacted]","serverKey":"[redacted]","iterations":4096}']),
    ("log /features", ["1  1970-01-01T00:00:02.000Z  FEATURE_LEVEL_RECORD  /features/metadata.version  created 27"]),
    ("log /configs --since 1970-01-01T00:00:12Z --until 17", [
        "17 (record 15)  1970-01-01T00:00:17.000Z  CONFIG_RECORD  /configs/TOPIC/orders/max.message.bytes  created 2000",
        *ABORTED,
        "13 (record 12)  1970-01-01T00:00:12.000Z  CONFIG_RECORD  /configs/TOPIC/orders/cleanup.policy  created compact"]),
    # one record's changes in the order it made them: the topic, its partition, its configs
    ("log /topics/orders --since 18 --until 18", [
        '18  1970-01-01T00:00:19.000Z  REMOVE_TOPIC_RECORD  /topics/orders  deleted (was {"id":"AAAAAAAAAAAAAAAAAAAAoQ",'
        '"name":"orders"})',
        '18  1970-01-01T00:00:19.000Z  REMOVE_TOPIC_RECORD  /topics/orders/0  deleted (was {"partitionId":0,"topicId":'
        '"AAAAAAAAAAAAAAAAAAAAoQ","replicas":[1,2],"isr":[1,2],"removingReplicas":[],"addingReplicas":[],"leader":1,'
        '"leaderRecoveryState":0,"leaderEpoch":0,"partitionEpoch":1,"directories":["AAAAAAAAAAAAAAAAAAAAAA",'
        '"AAAAAAAAAAAAAAAAAAAAAA"],"eligibleLeaderReplicas":[],"lastKnownElr":[]})',
        "18  1970-01-01T00:00:19.000Z  REMOVE_TOPIC_RECORD  /configs/TOPIC/orders/max.message.bytes  deleted (was 2000)",
        "18  1970-01-01T00:00:19.000Z  REMOVE_TOPIC_RECORD  /configs/TOPIC/orders/retention.ms  deleted (was 3600000)"]),
    # the first topic named orders, by id: nothing of the second
    (f"log /topic-ids/{OLD_ID} --since 7", [
        f'18  1970-01-01T00:00:19.000Z  REMOVE_TOPIC_RECORD  /topics/orders  deleted (was {{"id":"{OLD_ID}",'
        '"name":"orders"})',
        '18  1970-01-01T00:00:19.000Z  REMOVE_TOPIC_RECORD  /topics/orders/0  deleted (was {"partitionId":0,"topicId":'
        '"AAAAAAAAAAAAAAAAAAAAoQ","replicas":[1,2],"isr":[1,2],"removingReplicas":[],"addingReplicas":[],"leader":1,'
        '"leaderRecoveryState":0,"leaderEpoch":0,"partitionEpoch":1,"directories":["AAAAAAAAAAAAAAAAAAAAAA",'
        '"AAAAAAAAAAAAAAAAAAAAAA"],"eligibleLeaderReplicas":[],"lastKnownElr":[]})',
        "17 (record 16)  1970-01-01T00:00:17.000Z  PARTITION_CHANGE_RECORD  /topics/orders/0  isr [1] -> [1,2], "
        "partitionEpoch 0 -> 1"]),
    (f"log /topic-ids/{NEW_ID}/0 --since 21", [
        "30  1970-01-01T00:00:31.000Z  PARTITION_CHANGE_RECORD  /topics/orders/0  leader 1 -> 2, leaderEpoch 0 -> 1, "
        "partitionEpoch 0 -> 1, eligibleLeaderReplicas [] -> [1]"]),
]


@pytest.mark.parametrize("line, expected", LOG_TABLE, ids=[line for line, _ in LOG_TABLE])
def test_log(story: Path, line: str, expected: list[str]) -> None:
    assert run(story, line) == (0, expected, [])


DIFF_TABLE = [
    ("diff 5 7 /configs", ["~ /configs/TOPIC/orders/retention.ms  86400000 -> 3600000"]),
    ("diff 4 7 /configs", ["+ /configs/TOPIC/orders/retention.ms  3600000"]),  # set at 5: absent at 4
    ("diff 11 16", []),  # an aborted transaction, and one open at 16: nothing took effect
    ("diff 16 17 /configs", ["+ /configs/TOPIC/orders/max.message.bytes  2000"]),  # the commit, at its marker
    ("diff 17 20 /topics", [
        f"! /topics/orders  replaced: id {OLD_ID} -> {NEW_ID}",
        f"! /topics/orders/0  replaced: topicId {OLD_ID} -> {NEW_ID}, isr [1,2] -> [1], partitionEpoch 1 -> 0"]),
    ("diff 20 23 /brokers/1", [
        "~ /brokers/1  epoch 11 -> 30, incarnation-id AAAAAAAAAAAAAAAAAAAACg -> AAAAAAAAAAAAAAAAAAAACw, "
        "state active -> controlled-shutdown, in-controlled-shutdown false -> true"]),
    ("diff 7 30 /acls", []),  # created and removed between the points: no difference
    ("diff 3 21 /brokers/1/fenced", ["~ /brokers/1/fenced  false -> true"]),  # registered again: fenced
    ("diff 3 22 /brokers/1/fenced", []),  # ... and unfenced: changed and changed back
    ("diff 10 28 /scram", ["~ /scram/SCRAM-SHA-256/alice  iterations 4096 -> 8192"]),
    ("diff 23 latest /quorum", [  # in path order
        "+ /quorum/kraft-version  1", "~ /quorum/leader  leaderId 1 -> 2, epoch 1 -> 2",
        '+ /quorum/voters/1  {"id":1,"directory-id":"AAAAAAAAAAAAAAAAAAAA0Q","endpoints":[{"name":"CONTROLLER",'
        '"host":"c1","port":9093}]}',
        '+ /quorum/voters/2  {"id":2,"directory-id":"AAAAAAAAAAAAAAAAAAAA0g","endpoints":[{"name":"CONTROLLER",'
        '"host":"c2","port":9093}]}']),
    ("diff 1970-01-01T00:00:08Z 1970-01-01T00:00:19Z /configs/TOPIC/orders/retention.ms",
     ["- /configs/TOPIC/orders/retention.ms  (was 3600000)"]),
    ("diff 0 latest --stat", [
        "brokers        1 created", "features       1 created", "kraft_version  1 created",
        "leader_changes 1 changed", "voters         2 created", "scram          1 created", "topics         1 created",
        "partitions     1 created", "9 paths differ"]),
]


@pytest.mark.parametrize("line, expected", DIFF_TABLE, ids=[line for line, _ in DIFF_TABLE])
def test_diff(story: Path, line: str, expected: list[str]) -> None:
    assert run(story, line) == (0, expected, [])


def test_log_json_is_one_object_per_line(story: Path) -> None:
    status, out, err = run(story, "log /configs/TOPIC/orders --json")
    rows = [json.loads(line) for line in out]
    assert (status, err) == (0, [])
    # newest first, all in one stream: ``aborted`` tells them apart
    assert [(r["offset"], r["record_offset"], r["key"], r["old"], r["new"], r["aborted"], r["record"]) for r in rows] == [
        (33, 33, "retention.ms", None, "1", None, "CONFIG_RECORD"),
        (18, 18, "max.message.bytes", "2000", None, False, "REMOVE_TOPIC_RECORD"),
        (18, 18, "retention.ms", "3600000", None, False, "REMOVE_TOPIC_RECORD"),
        (17, 15, "max.message.bytes", None, "2000", False, "CONFIG_RECORD"),
        (13, 12, "cleanup.policy", None, "compact", True, "CONFIG_RECORD"),
        (7, 7, "retention.ms", "86400000", "3600000", False, "CONFIG_RECORD"),
        (5, 5, "retention.ms", None, "86400000", False, "CONFIG_RECORD")]
    assert {r["entity"] for r in rows} == {"topic orders"} and {r["domain"] for r in rows} == {"configs"}


def test_log_json_of_a_partition_keeps_the_fields_that_changed(story: Path) -> None:
    status, out, _ = run(story, "log /topics/orders/0 --since 21 --json")
    [row] = [json.loads(line) for line in out]
    assert row["fields"] == ["leader", "leaderEpoch", "partitionEpoch", "eligibleLeaderReplicas"]
    assert (row["old"], row["new"]) == ({"leader": 1, "leaderEpoch": 0, "partitionEpoch": 0, "eligibleLeaderReplicas": []},
                                        {"leader": 2, "leaderEpoch": 1, "partitionEpoch": 1, "eligibleLeaderReplicas": [1]})
    assert row["topic_id"] == NEW_ID and row["key"] == "0" and row["path"] == "/topics/orders/0"


def test_diff_json_and_stat_json(story: Path) -> None:
    _, out, _ = run(story, "diff 17 20 /topics --json")
    assert [(d["path"], d["kind"], d["domain"]) for d in map(json.loads, out)] == [
        ("/topics/orders", "replaced", "topics"), ("/topics/orders/0", "replaced", "partitions")]
    assert json.loads(out[0])["old"] == {"id": OLD_ID} and json.loads(out[0])["new"] == {"id": NEW_ID}
    _, out, _ = run(story, "diff 4 18 --stat --json")
    # at 4 the topic stands alone (its config and partition come at 5 and 6, and go with it at 18)
    assert [json.loads(line) for line in out] == [
        {"domain": "acls", "created": 1, "deleted": 0, "changed": 0, "replaced": 0},
        {"domain": "client_quotas", "created": 1, "deleted": 0, "changed": 0, "replaced": 0},
        {"domain": "scram", "created": 1, "deleted": 0, "changed": 0, "replaced": 0},
        {"domain": "topics", "created": 0, "deleted": 1, "changed": 0, "replaced": 0}]


BAD_INPUT = [
    ("log /nope", "metashell: log: /nope: no history is kept there (changes are kept under /brokers, /controllers, "
                  "/topics, /topic-ids, /features, /configs, /client-quotas, /acls, /scram, /delegation-tokens, "
                  "/producer-ids, /quorum)"),
    ("log /topics --since 99", "metashell: log: --since offset 99 is past the end of DIR: offsets -1..33 can be reached"),
    ("log / --until -2", "metashell: log: --until offset -2 is before the earliest point of DIR: offsets -1..33 can be "
                         "reached"),
    ("log / --since yesterday", "metashell: log: --since yesterday: not a position (an offset, a time in ISO 8601 or "
                                "epoch milliseconds as 1747366920000ms, or latest)"),
    ("log / --since 1969-12-31T00:00:00Z", "metashell: log: --since time 1969-12-31T00:00:00.000Z is before the "
                                           "earliest point of DIR: its earliest point is 1970-01-01T00:00:01.000Z"),
    ("log / --since 20 --until 10", "metashell: log: --since is after --until: 20 is after 10"),
    ("log -n 0", "metashell: log: -n 0: give a positive number of changes"),
    ("diff 20 10", "metashell: diff: A is after B: 20 is after 10"),
    ("diff latest 3", "metashell: diff: A is after B: latest is after 3"),
    ("diff -5 3", "metashell: diff: offset -5 is before the earliest point of DIR: offsets -1..33 can be reached"),
    ("diff 3 34", "metashell: diff: offset 34 is past the end of DIR: offsets -1..33 can be reached"),
    ("diff 3", "metashell: diff: the following arguments are required: b"),
    ("log /metrics", "metashell: log: /metrics: no history is kept there (changes are kept under /brokers, "
                     "/controllers, /topics, /topic-ids, /features, /configs, /client-quotas, /acls, /scram, "
                     "/delegation-tokens, /producer-ids, /quorum)"),
]


@pytest.mark.parametrize("line, expected", BAD_INPUT, ids=[line for line, _ in BAD_INPUT])
def test_bad_input_is_one_line(story: Path, line: str, expected: str) -> None:
    assert run(story, line) == (1, [], [expected])


def test_a_path_without_changes_says_so(story: Path) -> None:
    assert run(story, "log /topics/nothing") == (0, [], ["metashell: log: no changes under /topics/nothing in the "
                                                         "history held"])


def test_a_snapshot_has_no_history(story: Path) -> None:
    from engine.storage.log_reader import list_log_dir

    segment = list_log_dir(story).segments[0][1]
    err: list[str] = []
    session = Session(Source(snapshot=segment), out=err.append, err=err.append)
    session.load()
    assert session.run_line("log /topics") == 1
    assert err == ["metashell: log: needs a log directory (--log-dir), an archive or a live quorum: a snapshot holds "
                   "one point in time"]


def test_the_docs_examples_are_what_the_commands_print(story: Path) -> None:
    docs = (Path(__file__).resolve().parents[3] / "docs" / "shell.md").read_text()
    block = docs.split("## History: `log` and `diff`", 1)[1].split("```\n", 2)[1]
    examples: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("metashell:/> "):
            examples.append((line.removeprefix("metashell:/> "), []))
        else:
            examples[-1][1].append(line)
    assert [line for line, _ in examples] == ["log /configs/TOPIC/orders/retention.ms", "log /topics/orders/0 -n 1",
                                              "diff 17 20 /topics"]
    for line, shown in examples:
        assert run(story, line) == (0, shown, []), line
