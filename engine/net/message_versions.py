"""One kio message as another version of the same API, and the version two peers share.

A peer speaks a range of versions of each API; kio has one class per version. Converting
matches fields by name: fields the target lacks are dropped, fields the source lacks take
the target's defaults (TypeError when one has none). The server uses it to read older
requests with the core's classes; the client, to ask a peer that lacks our version.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from engine.net.errors import ProtocolError
from engine.net.kafka_protocol import request_class


def convert_message(message: Any, target: type, extra: dict[str, Any] | None = None) -> Any:
    """The same kio message as another version of it (see the module's rule); ``extra`` gives
    fields that do not carry over by name (a renamed or reshaped field), converted the same way
    and taken before the source's."""
    if type(message) is target:
        return message
    hints = typing.get_type_hints(target)
    values = {}
    for f in dataclasses.fields(target):
        if extra and f.name in extra:
            values[f.name] = _convert_value(extra[f.name], hints[f.name])
        elif hasattr(message, f.name):
            values[f.name] = _convert_value(getattr(message, f.name), hints[f.name])
    return target(**values)


def _convert_value(value: Any, hint: Any) -> Any:
    if value is None:
        return None
    if dataclasses.is_dataclass(value):
        entity = next((t for t in (hint, *typing.get_args(hint)) if isinstance(t, type)
                       and dataclasses.is_dataclass(t)), None)
        return convert_message(value, entity) if entity is not None else value
    if isinstance(value, tuple) and typing.get_origin(hint) is tuple:
        args = [a for a in typing.get_args(hint) if a is not Ellipsis]
        if len(args) == 1:
            return tuple(_convert_value(v, args[0]) for v in value)
    return value


def shared_version(api_key: int, version: int, served: tuple[int, int] | None) -> int | None:
    """The newest version of ``api_key`` at most ``version`` that the peer serves (``served``:
    its range) and kio has; None when there is none."""
    if served is None:
        return None
    for candidate in range(min(version, served[1]), served[0] - 1, -1):
        try:
            request_class(api_key, candidate)
        except ProtocolError:
            continue
        return candidate
    return None


__all__ = ["convert_message", "shared_version"]
