"""JAAS, as Kafka reads it: a ``sasl.jaas.config`` value (one login module), and the static JAAS
file a JVM is given with ``-Djava.security.auth.login.config=FILE``.

Why the file: operators who set SASL up before KIP-85 (or still follow older guides) keep their
logins in a JAAS file named in ``KAFKA_OPTS``, which Kafka's scripts hand to every JVM; their tools
and brokers work without any ``sasl.jaas.config``. Ours read the same file from the same variable,
with Kafka's precedence: a ``sasl.jaas.config`` (listener-prefixed for a server) wins; else the
file's ``KafkaClient`` section for a client, and ``<listener lowercase>.KafkaServer`` then
``KafkaServer`` for a listener and for a node's channel to the controllers (Kafka builds that one
as a server context).

Both are read as Java reads them: the same tokens (Java's StreamTokenizer, as Kafka's JaasConfig
and the JDK's ConfigFile use it), ``Section { module flag option="value" ...; ... };``, comments,
quoted values. A bad value or file is one ConfigError naming the key or the file.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Mapping, NamedTuple

from engine.common.errors import ConfigError

CONTROL_FLAGS = ("required", "requisite", "sufficient", "optional")
CLIENT_SECTION = "KafkaClient"
SERVER_SECTION = "KafkaServer"
JAAS_FILE_PROPERTY = "java.security.auth.login.config"


class JaasEntry(NamedTuple):
    """One login module of a JAAS configuration."""

    login_module: str
    control_flag: str
    options: dict[str, str]


def _word_start(c: str) -> bool:
    """Java's StreamTokenizer word characters as Kafka's JaasConfig sets them: ASCII letters,
    U+00A0-U+00FF, and - _ $ (any other character is a token of its own)."""
    return "a" <= c <= "z" or "A" <= c <= "Z" or "\u00a0" <= c <= "\u00ff" or c in "-_$"


def _jaas_tokens(text: str):
    """(kind, value) tokens as Java's StreamTokenizer reads a JAAS value in Kafka's JaasConfig: words
    (letters, digits, ``. - _ $``), quoted strings ("..." or '...', backslash escapes), // and /* */
    comments skipped, any other character a token of its own. A token starting with a digit is a number,
    which Kafka cannot use as a value (it must be quoted)."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c <= " ":
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c in "\"'":
            opened, out, i = i, [], i + 1
            while i < n and text[i] != c and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                    out.append({"n": "\n", "t": "\t", "r": "\r", "f": "\f", "b": "\b"}.get(text[i], text[i]))
                else:
                    out.append(text[i])
                i += 1
            if i >= n or text[i] != c:
                # the value is not shown: it may be a password
                raise ValueError(f"a quoted value is not terminated (opened at character {opened + 1})")
            i += 1
            yield "word", "".join(out)
        elif _word_start(c):
            start, i = i, i + 1  # a word goes on over word characters, digits and dots, as Java's
            while i < n and (_word_start(text[i]) or "0" <= text[i] <= "9" or text[i] == "."):
                i += 1
            yield "word", text[start:i]
        elif "0" <= c <= "9" or c == ".":
            start, i = i, i + 1
            while i < n and ("0" <= text[i] <= "9" or text[i] in ".-"):
                i += 1
            yield "number", text[start:i]
        else:
            i += 1
            yield "char", c


def _entries(tokens: list[tuple[str, str]], pos: int, end_char: str | None) -> tuple[list[JaasEntry], int]:
    """Login modules from ``pos`` until ``end_char`` (a section's closing brace) or the end."""
    entries: list[JaasEntry] = []
    while pos < len(tokens) and (end_char is None or tokens[pos] != ("char", end_char)):
        kind, module = tokens[pos]
        if kind != "word":
            raise ValueError(f"expected a login module class name (login module {len(entries) + 1})")
        if pos + 1 >= len(tokens) or tokens[pos + 1][0] != "word":
            raise ValueError("login module control flag not specified")
        flag = tokens[pos + 1][1].lower()
        if flag not in CONTROL_FLAGS:
            raise ValueError(f"invalid login module control flag {tokens[pos + 1][1]!r} "
                             f"(one of {', '.join(CONTROL_FLAGS)})")
        pos += 2
        options: dict[str, str] = {}
        while pos < len(tokens) and tokens[pos] != ("char", ";"):
            # An error names an option only where it stands as one (followed by "="): any other
            # token may be a piece of a password, and an error line must not show it.
            name = tokens[pos][1]
            where = f"option {len(options) + 1} of {module.rsplit('.', 1)[-1]}"
            if tokens[pos][0] != "word":
                raise ValueError(f"{where}: expected an option name")
            if pos + 1 >= len(tokens) or tokens[pos + 1] != ("char", "="):
                raise ValueError(f"{where} is not name=value")
            if pos + 2 >= len(tokens) or tokens[pos + 2][0] != "word":
                if pos + 2 < len(tokens) and tokens[pos + 2][0] == "number":
                    raise ValueError(f"value of option {name!r} must be quoted")
                raise ValueError(f"value not specified for option {name!r}")
            options[name] = tokens[pos + 2][1]
            pos += 3
        if pos >= len(tokens):
            raise ValueError("entry not terminated by a semicolon")
        pos += 1
        entries.append(JaasEntry(module, flag, options))
    return entries, pos


def parse_jaas_config(text: str, where: str | None, *, key: str = "sasl.jaas.config") -> JaasEntry:
    """``<LoginModuleClass> <flag> (<option>=<value>)*;`` -> (class, flag, options), with exactly one
    login module, as Kafka requires of a ``sasl.jaas.config`` value; a ConfigError naming ``key``."""
    try:
        entries, _ = _entries(list(_jaas_tokens(text)), 0, None)
        if not entries:
            raise ValueError("no login module")
        if len(entries) != 1:
            raise ValueError(f"{len(entries)} login modules, should be 1")
    except ValueError as err:
        raise ConfigError(f"bad {key}: {err}", path=where) from None
    return entries[0]


def _shown(name: str) -> str:
    """A name for an error line: as it is when it is a plain word, quoted (one line) otherwise."""
    return name if re.fullmatch(r"[\w.$-]+", name) else repr(name[:40])


def parse_jaas_file(text: str, where: str) -> dict[str, list[JaasEntry]]:
    """The sections of a JAAS file: ``Name { entries };`` each; ConfigError naming the file."""
    sections: dict[str, list[JaasEntry]] = {}
    try:
        tokens = list(_jaas_tokens(text))
        pos = 0
        while pos < len(tokens):
            kind, raw = tokens[pos]
            name = _shown(raw)
            if kind != "word":
                raise ValueError(f"expected a section name, got {raw!r}")
            if pos + 1 >= len(tokens) or tokens[pos + 1] != ("char", "{"):
                raise ValueError(f"section {name} does not open with {{")
            entries, pos = _entries(tokens, pos + 2, "}")
            if pos >= len(tokens):
                raise ValueError(f"section {name} is not closed with }}")
            pos += 1
            if pos >= len(tokens) or tokens[pos] != ("char", ";"):
                raise ValueError(f"section {name} is not terminated by a semicolon after }}")
            pos += 1
            if not entries:
                raise ValueError(f"section {name} has no login module")
            sections.setdefault(raw, []).extend(entries)
    except ValueError as err:
        raise ConfigError(f"bad JAAS file: {err}", path=where) from None
    return sections


_FILE_OPTION = re.compile(r"^-D" + re.escape(JAAS_FILE_PROPERTY) + r"==?(.+)$")


def jaas_file_path(environ: Mapping[str, str] | None = None) -> Path | None:
    """The JAAS file ``KAFKA_OPTS`` names (``-Djava.security.auth.login.config=FILE``), as Kafka's
    scripts give it to the JVM; None when it names none."""
    opts = (os.environ if environ is None else environ).get("KAFKA_OPTS", "")
    try:
        words = shlex.split(opts)
    except ValueError:
        words = opts.split()
    found = None
    for word in words:  # the last one wins, as for a JVM's repeated -D
        match = _FILE_OPTION.match(word)
        if match:
            found = _local_path(match.group(1))
    return found


def _local_path(value: str) -> Path:
    """The JDK takes the property as a path or a URL; a file: URL is the file it names."""
    if value.startswith("file:"):
        from urllib.parse import unquote, urlparse

        return Path(unquote(urlparse(value).path))
    return Path(value)


def static_jaas_section(names: tuple[str, ...], environ: Mapping[str, str] | None = None
                        ) -> tuple[list[JaasEntry], str] | None:
    """The first of the sections ``names`` in the JAAS file of ``KAFKA_OPTS`` and where it is
    (``FILE section NAME``), or None (no file, or none of those sections). A file named but not
    readable, or not JAAS, is a ConfigError: a login the operator set up must not be ignored."""
    path = jaas_file_path(environ)
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read the JAAS file {path} ({JAAS_FILE_PROPERTY} in KAFKA_OPTS): "
                          f"{getattr(err, 'strerror', None) or err}") from None
    sections = parse_jaas_file(text, str(path))
    for name in names:
        if name in sections:
            return sections[name], f"{path} section {name}"
    return None


__all__ = ["CLIENT_SECTION", "JaasEntry", "SERVER_SECTION", "jaas_file_path", "parse_jaas_config",
           "parse_jaas_file", "static_jaas_section"]
