"""``ssl.principal.mapping.rules``: the mTLS principal's name made from the certificate's subject,
as Kafka's SslPrincipalMapper makes it, so ACLs written for a Kafka cluster (``User:ops``, not
``User:CN=ops,OU=ServiceUsers,O=Acme``) name the same principal on our listeners.

The rules are a comma-separated list of ``DEFAULT`` (the subject as it is) and
``RULE:pattern/replacement/`` with an optional ``L`` or ``U`` after it (lower or upper case the
result). The first rule whose pattern matches the whole subject gives the name; when none does,
the connection is refused, as Kafka's principal builder fails it. Kafka's own parsing is kept:
the same splitting and rule grammar (a rule that does not parse is a config error naming it),
Java's ``replaceAll`` replacement syntax (``$1``, ``${name}``, ``\\$``), and NiFi's treatment,
which Kafka took over, of a ``$N`` past the pattern's last group as literal text.

Patterns are Java regexes read by Python's ``re``. The two agree on what rules are written with
(groups, classes, anchors, lazy and greedy quantifiers); named groups are translated, and classes
are ASCII, as Java's are. Other Java-only syntax (possessive quantifiers, inline flags past the
pattern's start, ``\\p{Lu}`` classes) is a config error here. One reading depends on Kafka's JVM:
``\\b`` is over Unicode letters on Java 17 and over ASCII (as ``\\w``) from Java 19; ours is ASCII.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Kafka's SslPrincipalMapper grammar, unchanged
_RULE_PATTERN = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER = re.compile(r"\s*(" + _RULE_PATTERN + r")\s*(,\s*|$)")
_RULE_PARSER = re.compile(_RULE_PATTERN)
_BACK_REFERENCE = re.compile(r"\$(\d+)")
# Java's named groups and their back references, in Python's spelling
_JAVA_NAMED_GROUP = re.compile(r"(?<!\\)\(\?<([A-Za-z][A-Za-z0-9]*)>")
_JAVA_NAMED_REFERENCE = re.compile(r"\\k<([A-Za-z][A-Za-z0-9]*)>")


def _python_regex(java_pattern: str) -> re.Pattern[str]:
    """A Java regex as Python's ``re`` reads it (named groups are the one spelling they differ in
    that mapping rules use; and Java's character classes are ASCII)."""
    pattern = _JAVA_NAMED_GROUP.sub(r"(?P<\1>", java_pattern)
    # re.ASCII: Java's \w, \d, \s, \b and (?i) are ASCII-only (without UNICODE_CHARACTER_CLASS),
    # so CN=josé matches ^CN=(\w+)$ in neither
    return re.compile(_JAVA_NAMED_REFERENCE.sub(r"(?P=\1)", pattern), re.ASCII)


class NoMatchingRule(ValueError):
    """No rule maps this subject: Kafka fails the connection's authentication."""


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""  # "L", "U" or ""
    source: str = ""  # the pattern as the rule wrote it

    def apply(self, subject: str) -> str | None:
        if self.pattern is None:
            return subject
        if self.pattern.fullmatch(subject) is None:
            return None
        groups = self.pattern.groups
        replacement = _escape_literal_back_references(self.replacement, groups)
        result = _replace_all(self.pattern, subject, replacement)
        return result.lower() if self.case == "L" else result.upper() if self.case == "U" else result

    def __str__(self) -> str:
        if self.pattern is None:
            return "DEFAULT"
        return f"RULE:{self.source}/{self.replacement}/{self.case}"


def _replace_all(pattern: re.Pattern[str], subject: str, replacement: str) -> str:
    """Java's String.replaceAll. Not re.sub: after an empty match Java searches again one
    character further on, where Python searches at the same place for a non-empty match; so
    ``(.*?)`` replaced by nothing leaves ``CN=`` whole in Java and empties it in Python."""
    out: list[str] = []
    copied = search = 0
    while search <= len(subject):
        match = pattern.search(subject, search)
        if match is None:
            break
        out.append(subject[copied:match.start()])
        out.append(_expand(replacement, match))
        copied = match.end()
        search = match.end() + 1 if match.end() == match.start() else match.end()
    out.append(subject[copied:])
    return "".join(out)


def _escape_literal_back_references(unescaped: str, group_count: int) -> str:
    """A ``$N`` naming no group of the pattern becomes literal text (``\\$N``), as Kafka's
    SslPrincipalMapper does (taken from NiFi's IdentityMappingUtil), positions and all."""
    if group_count == 0:
        return unescaped
    value = unescaped
    for ref in _BACK_REFERENCE.finditer(unescaped):
        number = ref.group(1)
        if number.startswith("0"):
            continue
        index = int(number)
        while index > group_count and index >= 10:
            index //= 10
        if index > group_count:
            start = ref.start(1)
            value = value[:start - 1] + "\\" + value[start - 1:]
    return value


def _expand(replacement: str, match: re.Match[str]) -> str:
    """Java's Matcher.appendReplacement: ``\\x`` is x, ``$N`` the longest group number the pattern
    has, ``${name}`` a named group; a group that took no part adds nothing."""
    out: list[str] = []
    i, n = 0, len(replacement)
    while i < n:
        c = replacement[i]
        if c == "\\":
            if i + 1 >= n:
                raise ValueError("character to be escaped is missing")
            out.append(replacement[i + 1])
            i += 2
        elif c == "$":
            i += 1
            if i < n and replacement[i] == "{":
                end = replacement.find("}", i)
                if end < 0:
                    raise ValueError("named capturing group is missing trailing '}'")
                name = replacement[i + 1:end]
                if name not in match.re.groupindex:
                    raise ValueError(f"No group with name {{{name}}}")  # Java's message
                out.append(match.group(name) or "")
                i = end + 1
            elif i < n and replacement[i].isdigit():
                ref = int(replacement[i])
                if ref > (match.re.groups):
                    raise ValueError(f"No group {ref}")
                i += 1
                while i < n and replacement[i].isdigit() and ref * 10 + int(replacement[i]) <= match.re.groups:
                    ref = ref * 10 + int(replacement[i])
                    i += 1
                out.append(match.group(ref) or "")
            else:
                raise ValueError("Illegal group reference")
        else:
            out.append(c)
            i += 1
    return "".join(out)


class SslPrincipalMapper:
    """The parsed rules; ``name(subject)`` is the principal's name, or NoMatchingRule."""

    def __init__(self, rules: list[_Rule]):
        self.rules = rules

    @classmethod
    def from_rules(cls, text: str) -> "SslPrincipalMapper":
        """Parse ``ssl.principal.mapping.rules``; ValueError naming the rule that does not parse."""
        rules: list[_Rule] = []
        for rule in (m.group(1) for m in _RULE_SPLITTER.finditer(text.strip())):
            parsed = _RULE_PARSER.match(rule)
            if parsed is None:
                raise ValueError(f"Invalid rule: {rule}")
            if parsed.end() != len(rule):
                raise ValueError(f"Invalid rule: `{rule}`, unmatched substring: `{rule[parsed.end():]}`")
            if parsed.group(1) is not None:
                rules.append(_Rule(None))
            elif parsed.group(2) is not None:
                try:
                    pattern = _python_regex(parsed.group(2))
                except re.error as err:
                    raise ValueError(f"Invalid rule: `{rule}`: its pattern does not compile: {err}") from None
                rules.append(_Rule(pattern, parsed.group(4), parsed.group(6), parsed.group(2)))
            # an empty rule is ignored, as in Kafka
        return cls(rules)

    @property
    def is_default(self) -> bool:
        """Whether every subject maps to itself (Kafka's default rules: ``DEFAULT``)."""
        return bool(self.rules) and self.rules[0].pattern is None

    def name(self, subject: str) -> str:
        for rule in self.rules:
            try:
                mapped = rule.apply(subject)
            except ValueError as err:  # a replacement Java's replaceAll would throw on, too
                raise NoMatchingRule(f"rule {rule} cannot map {subject}: {err}") from None
            if mapped is not None:
                return mapped
        raise NoMatchingRule(f"no rule of ssl.principal.mapping.rules maps {subject} "
                             f"(rules: {', '.join(map(str, self.rules)) or 'none'})")


__all__ = ["NoMatchingRule", "SslPrincipalMapper"]
