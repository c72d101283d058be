"""The shell's command table: each command registers itself here with its parser and ``man`` text.

Kept apart from the session so that the session can look commands up and the commands can take
a session, without the two modules importing each other. ``metashell.shell`` imports
``commands`` so that the table is full whenever the package is used.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Callable

from metashell.shell.suggest import hint


class ShellError(Exception):
    """A command's one-line complaint; the shell prints it and carries on."""


class ExitShell(Exception):
    pass


class ArgParser(argparse.ArgumentParser):
    """A command's parser: a usage error is a ShellError (one line), never an exit; an unknown
    option names the command's options close to it."""

    def parse_args(self, args: Any = None, namespace: Any = None) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            options = [o for action in self._actions for o in action.option_strings]
            near = hint(extras[0], options) if extras[0].startswith("-") else ""
            self.error(f"unrecognized arguments: {' '.join(extras)}{near}")
        return parsed

    def error(self, message: str) -> None:
        raise ShellError(message)

    def exit(self, status: int = 0, message: str | None = None) -> None:
        raise ShellError(message or "bad arguments")


@dataclass(frozen=True)
class Command:
    name: str
    summary: str
    man: str  # usage and examples, shown by man
    parser: ArgParser
    handler: Callable[[Any, argparse.Namespace], int]

    def run(self, session: Any, words: list[str]) -> int:
        args = self.parser.parse_args(words)
        return self.handler(session, args) or 0


COMMANDS: dict[str, Command] = {}


def unknown_command(name: str) -> str:
    """The one line for a command that is not there: ``unknown command: lss (did you mean ls?)``."""
    return f"unknown command: {name}{hint(name, COMMANDS) or ' (try: help)'}"


def command(name: str, summary: str, man: str, arguments: Callable[[ArgParser], None] = lambda p: None):
    """Register a handler as a shell command."""
    def register(handler: Callable[[Any, argparse.Namespace], int]) -> Callable:
        parser = ArgParser(prog=name, add_help=False)
        arguments(parser)
        COMMANDS[name] = Command(name, summary, man.strip(), parser, handler)
        return handler
    return register
