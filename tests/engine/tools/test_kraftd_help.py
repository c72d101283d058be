"""``kraftd --help`` (and each level below it) lists every subcommand with a line saying what it does."""

from __future__ import annotations

import argparse

from engine.tools.cli import build_parser


def _unexplained(parser: argparse.ArgumentParser, path: str) -> list[str]:
    missing = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helped = {choice.dest for choice in action._choices_actions}
            for name, sub in action.choices.items():
                if name not in helped or f"    {name}" not in parser.format_help():
                    missing.append(f"{path} {name}")
                missing += _unexplained(sub, f"{path} {name}")
    return missing


def test_every_kraftd_subcommand_is_listed_with_its_help() -> None:
    assert _unexplained(build_parser(), "kraftd") == []
