"""The rules of the comparison with Kafka's shell (tests/kafka_shell_compare.py), without Kafka:
what counts as the same answer, what an older release prints instead, and that one changed
character is one difference naming its command and line. The comparisons themselves are
test_kafka_shell_corpus.py, test_kafka_shell_edges.py and test_kafka_metadata_shell.py."""

from __future__ import annotations

from tests.kafka_shell_compare import compare, expected_of_older, in_kafka_names, same_meaning

BROKER = ("BrokerRegistration(id=1, epoch=5, incarnationId=AAAAAAAAAAAAAAAAAAAAAQ, listeners=[], supportedFeatures={}, "
          "rack=Optional.empty, fenced=false, inControlledShutdown=false, isMigratingZkBroker=false, directories=[]")
ACL = ("StandardAcl[resourceType=TOPIC, resourceName=orders, patternType=LITERAL, principal=User:alice, host=*, "
       "operation=READ, permissionType=ALLOW]")


def test_one_changed_character_is_one_difference_naming_command_and_line() -> None:
    brokers = "tree '/image/cluster/brokers'"
    kafka = {"ls /image": "acls\nclientQuotas\n", brokers: f"1:\n  {BROKER}, cordonedDirectories=null)\n"}
    assert compare("same", kafka, dict(kafka), {}, older=False).differences == []
    changed = {**kafka, brokers: kafka[brokers].replace("epoch=5", "epoch=6")}
    (difference,) = compare("x", kafka, changed, {}, older=False).differences
    assert difference.startswith("x: tree '/image/cluster/brokers': line 2:") and "epoch=6" in difference
    (missing,) = compare("x", kafka, {"ls /image": kafka["ls /image"]}, {}, older=False).differences
    assert "not asked of ours" in missing
    assert compare("x", kafka, changed, {}, older=False, skip=frozenset(kafka)).differences == []


def test_opening_nothing_is_the_same_answer_in_either_words() -> None:
    assert same_meaning("find: /image/x: no such file or directory.\n", "metashell: find: /image/x: no such node\n")
    assert same_meaning("cat: '/image/x': No such file or directory.\n", "metashell: cat: /image/x: no such node\n")
    assert not same_meaning("find: /image/x: no such file or directory.\n", "metashell: find: /image/y: no such node\n")
    assert not same_meaning("find: /image/x: no such file or directory.\n", "/image/x\n")


def test_an_older_release_prints_exactly_these_differences() -> None:
    assert expected_of_older("ls /image/features", "finalized_group.version\nmetadataVersion\n") == (
        "finalized_group.version\nmetadataVersion\nzkMigrationState\n")
    assert expected_of_older("tree x", f"  {BROKER}, cordonedDirectories=null)\n") == f"  {BROKER})\n"
    # a broker that cordoned directories has no 4.1 form: left as it is, so the comparison fails
    cordoned = f"{BROKER}, cordonedDirectories=[AAAAAAAAAAAAAAAAAAAAAQ])\n"
    assert expected_of_older("cat x", cordoned) == cordoned
    assert expected_of_older("tree x", f"    {ACL}\n") == "    " + ACL.replace("[", "(", 1)[:-1] + ")\n"
    assert expected_of_older("ls /image/acls", "byId\n") == "byId\n"


def test_our_names_read_as_kafkas() -> None:
    names = {"clientId(<default>)": "", "clientId(<default>)_user(bob)": "user(bob)"}
    ours = "clientId(<default>)\nclientId(<default>)_user(bob)\nip(10.0.0.1)\n"
    assert in_kafka_names("ls /image/clientQuotas", ours, names) == "\nip(10.0.0.1)\nuser(bob)\n"
    assert in_kafka_names("ls /image/configs", "GROUP:two%20words\nTOPIC:a\n", {}) == "GROUP:two words\nTOPIC:a\n"
    assert in_kafka_names("find '/image/configs/GROUP:two words'", "/image/configs/GROUP:two%20words\n", {}) == (
        "/image/configs/GROUP:two words\n")
    assert in_kafka_names("tree '/image/configs'", "GROUP:two%20words:\n  x:\n    100%20\n", {}) == (
        "GROUP:two words:\n  x:\n    100%20\n")
