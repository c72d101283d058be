"""Errors that reach a user as one line naming what and where."""

from __future__ import annotations


class MetadataError(Exception):
    """Base for every error the engine reports to a user.

    ``str(err)`` is the one line a CLI prints: it names the file (when known),
    the byte offset (when known) and the reason.
    """

    def __init__(self, reason: str, *, path: str | None = None, byte_offset: int | None = None):
        self.reason = reason
        self.path = path
        self.byte_offset = byte_offset
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = []
        if self.path is not None:
            where.append(str(self.path))
        if self.byte_offset is not None:
            where.append(f"byte offset {self.byte_offset}")
        return f"{': '.join([', '.join(where), self.reason]) if where else self.reason}"

    def at(self, path: str | None = None, base_offset: int | None = None) -> "MetadataError":
        """The same error, placed in a file and shifted by where its buffer started.

        An error with no offset of its own is placed at ``base_offset``.
        """
        if base_offset is None:
            offset = self.byte_offset
        elif self.byte_offset is None:
            offset = base_offset
        else:
            offset = self.byte_offset + base_offset
        return type(self)(self.reason, path=path if path is not None else self.path, byte_offset=offset)


class CorruptRecordError(MetadataError):
    """Bytes that are not a valid record batch or record."""


class TruncatedError(CorruptRecordError):
    """Bytes that end before the structure they start is complete."""


class UnsupportedCompressionError(MetadataError):
    """A batch compressed with a codec we cannot decode here."""


class StorageError(MetadataError):
    """A metadata directory or file that is missing, malformed or inconsistent."""


class ConfigError(MetadataError):
    """A bad configuration file or command-line option."""


class OffsetOutOfRange(ConfigError):
    """A point (an offset or a time) outside what a log can answer: the reachable offsets ride along
    (``first`` and ``last``, inclusive; ``last`` < ``first`` when there is nothing), so a caller (the
    shell's seek, the dashboard's ``g``) can say so, or offer them, without parsing the line."""

    def __init__(self, reason: str, *, first: int, last: int, damage: str | None = None,
                 path: str | None = None, byte_offset: int | None = None,
                 runs: tuple[tuple[int, int], ...] | None = None):
        self.first = first
        self.last = last
        # the runs of reachable offsets, (first, last) inclusive: more than one when damage cuts a gap
        self.runs = runs if runs is not None else ((first, last),)
        self.damage = damage  # the one line naming where the log stopped reading, when damage cut it short
        super().__init__(reason, path=path, byte_offset=byte_offset)

    def at(self, path: str | None = None, base_offset: int | None = None) -> "OffsetOutOfRange":
        return OffsetOutOfRange(self.reason, first=self.first, last=self.last, damage=self.damage,
                                path=path if path is not None else self.path, byte_offset=self.byte_offset,
                                runs=self.runs)
