"""The table of what the controller serves: every manager's ``COMMANDS``, by API key."""

from __future__ import annotations

from engine.controller.controller_result import Command

# Each manager module lists its commands in COMMANDS; import it here and add it to _MANAGERS.
_MANAGERS: tuple = (
)


def all_commands() -> dict[int, Command]:
    table: dict[int, Command] = {}
    for manager in _MANAGERS:
        for command in manager.COMMANDS:
            if command.api_key in table:
                raise ValueError(f"api key {command.api_key} served twice")
            table[command.api_key] = command
    return table
