"""``ssl.principal.mapping.rules`` against Kafka's own SslPrincipalMapper: random rule lists
(DEFAULT and RULE:pattern/replacement/ with L, U or neither) over random distinguished names
give the same principal, or are refused by both: the rules as a config error, a subject as no
principal. Ours: engine/net/ssl_principal_mapper.py.

Patterns are drawn from the regex syntax mapping rules are written with (groups, named groups
and their back references, classes, lazy and greedy quantifiers, anchors, (?i)), which Java and
Python's re read alike; Java-only syntax is a config error in ours by design (the module says
so) and is not drawn. Nor is \\b: Java 17 reads it over Unicode letters (é is a word
character to \\b though not to \\w) and Java 19+ over ASCII as \\w, so Kafka's answer for
CN=é depends on its JVM; ours follows the newer, ASCII one. Replacements mix group references
past the pattern's groups, named ones, escapes and a lone '$' or '\\'."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings, strategies as st
from kafka_peer.harness import DIFF_EXAMPLES

from engine.net.ssl_principal_mapper import NoMatchingRule, SslPrincipalMapper

pytestmark = pytest.mark.kafka

ATTRIBUTES = ["CN", "OU", "O", "L", "ST", "C", "UID", "DC", "cn"]
VALUE_CHARS = list("abcXYZ019 .-_$\\@é") + ["\\,", "\u0661"]
PATTERN_PIECES = ["^", "$", "CN=", "OU=", "O=", "cn=", ",", "(.*?)", "(.*)", "([^,]*)", "(\\w+)", "([a-z]+)",
                  "(?<who>[^,]*)", "\\k<who>", "[Cc][Nn]=", ".*", ".+?", "\\d+", "\\s*", "(\\d*)", "x", "y",
                  "(?:a|b)", "[a-zA-Z0-9.]*", "\\."]
REPLACEMENT_PIECES = ["$1", "$2", "$3", "$0", "$12", "$9", "${who}", "${nobody}", "\\$", "\\\\", "@", "x", "-",
                      "user-", "$", "\\", "/", ":"]


@st.composite
def subjects(draw) -> str:
    parts = draw(st.lists(st.tuples(st.sampled_from(ATTRIBUTES), st.lists(st.sampled_from(VALUE_CHARS), max_size=6)),
                          min_size=0, max_size=5))
    return ",".join(f"{name}={''.join(value)}" for name, value in parts)


@st.composite
def rule(draw) -> str:
    if draw(st.integers(0, 4)) == 0:
        return "DEFAULT"
    flags = draw(st.sampled_from(["", "(?i)"]))
    pattern = flags + "".join(draw(st.lists(st.sampled_from(PATTERN_PIECES), min_size=1, max_size=8)))
    replacement = "".join(draw(st.lists(st.sampled_from(REPLACEMENT_PIECES), max_size=4)))
    return f"RULE:{pattern}/{replacement}/{draw(st.sampled_from(['', 'L', 'U']))}"


RULES = st.builds(lambda rules, sep: sep.join(rules), st.lists(rule(), max_size=4), st.sampled_from([",", ", ", " ,  "]))


def _ours(rules: str, names: list[str]) -> dict:
    try:
        mapper = SslPrincipalMapper.from_rules(rules)
    except ValueError as err:
        return {"invalid": str(err)}
    answers = []
    for subject in names:
        try:
            answers.append({"name": mapper.name(subject)})
        except NoMatchingRule as err:
            answers.append({"refused": str(err)})
    return {"names": answers}


def _outcomes(answer: dict) -> object:
    """What must agree: the names, and which rules and subjects are refused (not the wording)."""
    if "invalid" in answer:
        return "invalid"
    return [a.get("name", "refused") for a in answer["names"]]


def _compare(kafka_classes, rules: str, names: list[str]) -> None:
    kafkas = kafka_classes.call("SslPrincipalMapper", rules=rules, subjects=names)
    assert _outcomes(_ours(rules, names)) == _outcomes(kafkas), (rules, kafkas)


@settings(max_examples=DIFF_EXAMPLES, deadline=None)
@given(RULES, st.lists(subjects(), min_size=1, max_size=4))
@example("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT", ["CN=Duke,OU=ServiceUsers,O=Org,C=US", "CN=x"])
@example("RULE:^CN=([^,]*),O=(.*)$/$1$3-$2$0/, RULE:^CN=(.*)$/\\$1\\\\x/", ["CN=a$b,O=x", "CN=z"])
@example("RULE:^CN=(?<who>[^,]*),.*$/${nobody}/, RULE:^CN=([^,]*),O=x$/$/, DEFAULT", ["CN=a,O=x", "CN=a,O=y"])
@example("RULE:^CN=(\\w+),O=(\\d*)$/$1-$2/, RULE:(?i)^cn=([^,]*),.*$/$1/U", ["CN=jos\u00e9,O=\u0661\u0662"])
# found by this test: Java's replaceAll steps past an empty match, re.sub did not
@example("RULE:^//,RULE:(.*?)//", ["CN="])
@example("RULE:^CN=(.*)$/$1/Lx", ["CN=a"])
@example("RULE:^CN=(.*$/$1/", ["CN=a"])
@example("DEFAULT,RULE:^CN=(.*)$/$1/,garbage", ["CN=a"])
def test_principals_are_kafkas_for_rules_as_written(kafka_classes, rules, names):
    _compare(kafka_classes, rules, names)


@settings(max_examples=DIFF_EXAMPLES, deadline=None)
@given(st.text(st.sampled_from(list("RULE:DEFAULT^$()/\\,LU.*?[]=-_abcCN0129 $k")), max_size=60),
       st.lists(st.text(st.sampled_from(list("CN=OU,abc$\\()0129 ")), max_size=30), min_size=1, max_size=3))
def test_any_text_as_rules_is_read_or_refused_as_kafka_does(kafka_classes, rules, names):
    _compare(kafka_classes, rules, names)


# rule lists and subjects written by hand to reach every outcome: mapped, defaulted, refused,
# invalid; named groups, back references, lookbehind, (?i), $N past the last group
HAND_SUBJECTS = [
    "CN=Duke,OU=ServiceUsers,O=Org,C=US", "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US",
    "OU=sales,cn=alpha.Beta,O=Acme", "CN=ops,O=Acme", "UID=17,DC=example,DC=com", "CN=a$b,O=x", "CN=acme,O=acme",
    "CN=jos\u00e9,O=\u0661\u0662",
]
HAND_RULES = [
    "DEFAULT", "",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,RULE:^UID=(\\d+),.*$/user-$1/",
    "RULE:^CN=([^,]*),O=(.*)$/$1$3-$2$0/, RULE:^CN=(.*)$/\\$1\\\\x/",
    "  RULE:^CN=(.*?),O=Acme$/$1/  ,  RULE:^(.*)$/other:$1/U  ",
    "RULE:^CN=(?<who>[^,]*),.*$/${who}!/",
    "RULE:^CN=(?<w>[a-z]+),O=\\k<w>$/same:$1/, RULE:(?<=x)y/z/",
]


@pytest.mark.parametrize("rules", HAND_RULES)
def test_hand_written_rules_name_as_kafkas(kafka_classes, rules):
    _compare(kafka_classes, rules, HAND_SUBJECTS)
