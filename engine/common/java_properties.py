"""Java ``.properties`` files as Kafka reads and writes them.

Kafka keeps ``meta.properties`` and its server configs in this format. Parsing
follows ``java.util.Properties.load``: ``#``/``!`` comment lines, ``=``, ``:`` or
whitespace separators, backslash line continuations and escapes. Writing follows
``Properties.store``: a ``#`` comment, a ``#<date>`` line, then ``key=value`` lines
escaped as Java escapes them, in an order chosen to match the JVM that wrote a file.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal, Mapping

from engine.common.errors import StorageError
from engine.common.file_io import StrPath, read_text_file, write_bytes_atomically

KeyOrder = Literal["insertion", "sorted", "jdk-hash"]

_PHYSICAL_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # what Java's LineReader splits on
_JAVA_WHITESPACE = " \t\f"
_LOAD_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SAVE_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f",
                 "=": "\\=", ":": "\\:", "#": "\\#", "!": "\\!", "\\": "\\\\"}
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


# ---------------------------------------------------------------- parsing

def load_properties(path: StrPath) -> dict[str, str]:
    """The properties in the file at ``path``, read as ISO-8859-1 the way Java's
    ``Properties.load(InputStream)`` reads Kafka's configs (other characters come as \\uXXXX).

    A file holding control bytes (a NUL, or any below 0x20 but tab, line breaks and form feed) is
    refused: it is binary data, not a properties file, though Java would read keys out of it
    (a wrong --command-config would connect with none of its settings, silently). High bytes stay
    characters, as in Java: a Latin-1 or UTF-8 text file reads as Kafka reads it."""
    text = read_text_file(path, encoding="latin-1")
    found = _CONTROL_BYTE.search(text)
    if found is not None:
        line = text.count("\n", 0, found.start()) + 1
        raise StorageError(f"not a properties file: line {line} holds the control byte 0x{ord(found.group()):02x}, "
                           "so this is binary data, not text", path=str(path), byte_offset=found.start())
    return parse_properties(text, path=path)


_CONTROL_BYTE = re.compile("[\x00-\x08\x0b\x0e-\x1f]")  # \t \n \f \r are Java's whitespace and line breaks


def parse_properties(text: str, path: StrPath | None = None) -> dict[str, str]:
    """Properties from ``text``, read as ``java.util.Properties.load`` reads them (last key wins)."""
    props: dict[str, str] = {}
    for line_no, line in _logical_lines(text):
        key_end, value_start = _split_key_value(line)
        where = (path, line_no)
        props[_unescape(line[:key_end], where)] = _unescape(line[value_start:], where)
    return props


def _logical_lines(text: str):
    """(first line number, logical line) pairs: comments and blanks dropped, continuations joined."""
    physical = _PHYSICAL_LINE_BREAK.split(text)
    i = 0
    while i < len(physical):
        line_no, line = i + 1, physical[i].lstrip(_JAVA_WHITESPACE)
        i += 1
        if not line or line[0] in "#!":
            continue  # a comment line never continues, even if it ends with a backslash
        while _ends_in_continuation(line):
            line = line[:-1]
            if i == len(physical):
                break  # a backslash before end of file is dropped, as Java does
            line += physical[i].lstrip(_JAVA_WHITESPACE)
            i += 1
        yield line_no, line


def _ends_in_continuation(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1  # "\\\\" at the end is an escaped backslash, not a continuation


def _split_key_value(line: str) -> tuple[int, int]:
    """Where the key ends and the value starts: first unescaped '=', ':' or whitespace."""
    key_end, escaped, has_separator = 0, False, False
    value_start = len(line)
    while key_end < len(line):
        c = line[key_end]
        if not escaped and c in "=:":
            value_start, has_separator = key_end + 1, True
            break
        if not escaped and c in _JAVA_WHITESPACE:
            value_start = key_end + 1
            break
        escaped = (c == "\\") and not escaped
        key_end += 1
    # "key = value" and "key value": skip blanks, and one '=' or ':' if none was seen yet
    while value_start < len(line):
        c = line[value_start]
        if c not in _JAVA_WHITESPACE:
            if has_separator or c not in "=:":
                break
            has_separator = True
        value_start += 1
    return key_end, value_start


def _unescape(s: str, where: tuple[StrPath | None, int]) -> str:
    if "\\" not in s:
        return s
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        i += 1
        if c != "\\" or i == len(s):
            out.append(c)
            continue
        c = s[i]
        i += 1
        if c == "u":
            digits = s[i:i + 4]
            if len(digits) != 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
                path, line_no = where
                raise StorageError(f"line {line_no}: malformed \\uxxxx escape \\u{digits}",
                                   path=None if path is None else str(path))
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_LOAD_ESCAPES.get(c, c))
    return _join_surrogates("".join(out))


def _join_surrogates(s: str) -> str:
    """Java strings are UTF-16: "\\ud83d\\ude00" is one character, so pair the halves up."""
    if not any("\ud800" <= c <= "\udfff" for c in s):
        return s
    try:
        return s.encode("utf-16-be", "surrogatepass").decode("utf-16-be")
    except UnicodeDecodeError:
        return s  # a lone surrogate: Java keeps it too


# ---------------------------------------------------------------- writing

def dump_properties(props: Mapping[str, str], header_comment: str | None = "", *,
                    now: datetime | None = None, key_order: KeyOrder = "insertion",
                    escape_unicode: bool = True) -> str:
    """Text as ``Properties.store`` writes it.

    ``header_comment`` "" gives Kafka's empty ``#`` line; None gives no comment line.
    ``key_order``: "sorted" is what JDK 18+ writes, "jdk-hash" what JDK 9-17 writes
    (hash-table order). ``escape_unicode`` writes non-ASCII as ``\\uXXXX`` so that Java's
    ISO-8859-1 ``load(InputStream)``, which Kafka uses, reads it back correctly.
    """
    lines = [] if header_comment is None else _comment_lines(header_comment)
    lines.append("#" + java_date_string(now))
    for key in _ordered_keys(props, key_order):
        key_text = _escape(key, escape_space=True, escape_unicode=escape_unicode)
        value_text = _escape(props[key], escape_space=False, escape_unicode=escape_unicode)
        lines.append(f"{key_text}={value_text}")
    return "".join(line + "\n" for line in lines)


def write_properties_atomically(path: StrPath, props: Mapping[str, str],
                                now: datetime | None = None, *, header_comment: str | None = "",
                                key_order: KeyOrder = "insertion") -> None:
    """Write ``props`` to ``path`` as Kafka does (header "", UTF-8), atomically and durably."""
    text = dump_properties(props, header_comment, now=now, key_order=key_order)
    write_bytes_atomically(path, text.encode("utf-8"))


def java_date_string(now: datetime | None = None) -> str:
    """``now`` as Java's Date.toString prints it: "Sun May 11 08:08:34 UTC 2025"."""
    moment = datetime.now() if now is None else now
    if moment.tzinfo is None:
        moment = moment.astimezone()  # a naive time is local time, as the JVM's default zone
    zone = moment.tzname() or "GMT"
    if zone.startswith("UTC") and len(zone) > 3:
        zone = "GMT" + zone[3:]  # Java names a bare offset "GMT+01:00"
    return (f"{_DAYS[moment.weekday()]} {_MONTHS[moment.month - 1]} {moment.day:02d} "
            f"{moment:%H:%M:%S} {zone} {moment.year}")


def _comment_lines(comment: str) -> list[str]:
    """Comment lines as Properties.writeComments makes them: each starts with '#' or '!'."""
    lines = []
    for i, part in enumerate(_PHYSICAL_LINE_BREAK.split(comment)):
        part = "".join(c if ord(c) <= 0xFF else _unicode_escapes(c) for c in part)
        lines.append(part if i > 0 and part[:1] in ("#", "!") else "#" + part)
    return lines


def _escape(s: str, *, escape_space: bool, escape_unicode: bool) -> str:
    out = []
    for i, c in enumerate(s):
        if c == " ":
            out.append("\\ " if escape_space or i == 0 else " ")  # a leading space would be lost
        elif c in _SAVE_ESCAPES:
            out.append(_SAVE_ESCAPES[c])
        elif escape_unicode and not " " <= c <= "~":
            out.append(_unicode_escapes(c))
        else:
            out.append(c)
    return "".join(out)


def _unicode_escapes(c: str) -> str:
    """``\\uXXXX`` per UTF-16 unit, as Java escapes its chars (so two for an emoji)."""
    raw = c.encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{int.from_bytes(raw[i:i + 2], 'big'):04X}" for i in range(0, len(raw), 2))


def _ordered_keys(props: Mapping[str, str], key_order: KeyOrder) -> list[str]:
    keys = list(props)
    if key_order == "insertion":
        return keys
    if key_order == "sorted":
        return sorted(keys, key=lambda k: k.encode("utf-16-be", "surrogatepass"))  # String.compareTo
    if key_order == "jdk-hash":
        return _concurrent_hash_map_order(keys)
    raise ValueError(f"unknown key order {key_order!r}")


def _java_string_hash(s: str) -> int:
    h = 0
    raw = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(raw), 2):
        h = (31 * h + int.from_bytes(raw[i:i + 2], "big")) & 0xFFFFFFFF
    return h


def _concurrent_hash_map_order(keys: list[str]) -> list[str]:
    """Iteration order of a JDK 9-17 ``Properties`` (a ConcurrentHashMap of initial capacity 8).

    The table starts with 16 bins and doubles when the count reaches 3/4 of it;
    colliding keys stay in insertion order until a resize splits their bin.
    (Bins of 8+ keys become trees in the JVM; we do not model that.)
    """
    n = 16
    table: list[list[tuple[int, str]]] = [[] for _ in range(n)]
    for count, key in enumerate(keys, start=1):
        h = _java_string_hash(key)
        h = (h ^ (h >> 16)) & 0x7FFFFFFF
        table[h & (n - 1)].append((h, key))
        if count >= n - (n >> 2):
            table = _resize(table, n)
            n *= 2
    return [key for bin_ in table for _, key in bin_]


def _resize(table: list[list[tuple[int, str]]], n: int) -> list[list[tuple[int, str]]]:
    """ConcurrentHashMap.transfer: each bin splits into a low and a high bin.

    The longest tail run going to the same side keeps its order; nodes before it
    are pushed on the front of their list, so they come out reversed.
    """
    grown: list[list[tuple[int, str]]] = [[] for _ in range(2 * n)]
    for i, nodes in enumerate(table):
        if not nodes:
            continue
        last = len(nodes) - 1
        while last > 0 and (nodes[last - 1][0] & n) == (nodes[last][0] & n):
            last -= 1
        lo, hi = grown[i], grown[i + n]
        (hi if nodes[last][0] & n else lo).extend(nodes[last:])
        for node in nodes[:last]:
            (hi if node[0] & n else lo).insert(0, node)
    return grown
